import DurableWorkflow
import Foundation
import LMDB
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowSignals

@Suite("Signal bad input: typed errors, nothing lost")
struct SignalBadInputTests {
    @Test("an unknown signal id is a typed error")
    func unknownSignal() throws {
        let dir = TemporaryDirectory("sig-unknown")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let error = expectSignalError(.unknownSignal) { _ = try center.versions(of: signal) }
        #expect(error?.signal == signal)
        expectSignalError(.unknownConsumer) { try center.removeConsumer(ConsumerID()) }
    }

    @Test("a payload that does not decode for the consumer's type is a typed error naming signal and version")
    func undecodablePayload() throws {
        let dir = TemporaryDirectory("sig-decode")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        try center.post(signal, value: "not a number")
        let version = try #require(try center.versions(of: signal).first)
        let error = expectSignalError(.undecodablePayload) { _ = try version.decode(Int.self) }
        #expect(error?.version == 1)
        #expect(try version.decode(String.self) == "not a number")
    }

    @Test("a handler that throws leaves the version unmarked and it is retried until it succeeds")
    func throwingHandlerIsRetried() throws {
        struct Flaky: Error {}
        let dir = TemporaryDirectory("sig-retry")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p", configuration: .init(retryDelay: .milliseconds(10)))
        let signal = SignalID()
        let transactional = try center.register(signal, owner: "t"), atLeastOnce = try center.register(signal, owner: "a")
        let attempts = Received(), succeeded = Received()
        center.attach(transactional, handler: .transactional { delivery, _ in
            attempts.append(delivery.version)
            if attempts.all.count < 3 { throw Flaky() }
            succeeded.append(delivery.version)
        })
        let atLeastOnceAttempts = Received()
        center.attach(atLeastOnce, handler: .atLeastOnce { delivery in
            atLeastOnceAttempts.append(delivery.version)
            if atLeastOnceAttempts.all.count < 2 { throw Flaky() }
        })
        try center.post(signal, terminatesConsumersAfterDelivery: false)
        #expect(eventually { succeeded.all == [1] && atLeastOnceAttempts.all.count == 2 })
        #expect(attempts.all == [1, 1, 1])
        #expect(eventually { (try? center.consumers().allSatisfy { $0.lastDelivered == 1 }) == true })
    }

    @Test("a post to a read-only store is a typed error and changes nothing")
    func readOnlyStore() throws {
        let dir = TemporaryDirectory("sig-readonly")
        let signal = SignalID()
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "writer")
            try center.post(signal, value: 1)
            try center.stop()
        }
        let reader = try SignalCenter.open(path: dir.path, processIdentity: "reader", storeConfiguration: .readOnly)
        let error = expectSignalError(.storage) { try reader.post(signal, value: 2) }
        #expect(error?.storageFailure?.kind == .readOnly)
        #expect(try reader.signals().first?.latestVersion == 1)
    }
}
