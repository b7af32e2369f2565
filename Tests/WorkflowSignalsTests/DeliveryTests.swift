import DurableWorkflow
import Foundation
import LMDB
import Synchronization
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowLocks
import WorkflowSignals

/// A thread-safe list of what handlers received.
final class Received: Sendable {
    private let storage = Lock<[UInt64]>([])
    func append(_ version: UInt64) { storage.withLock { $0.append(version) } }
    var all: [UInt64] { storage.withLock { $0 } }
}

/// Waits (bounded) until `condition` holds.
func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(1000)
    }
    return try condition()
}

@Suite("Signal delivery: versions, behaviours, lifecycle (S1-S5)")
struct DeliveryTests {
    @Test("each version posted is delivered once, in order, to a transactional consumer")
    func inOrderExactlyOnce() throws {
        let dir = TemporaryDirectory("sig-order")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        center.attach(consumer, handler: .transactional { delivery, _ in received.append(delivery.version) })
        for index in 1...50 { try center.post(signal, value: index, terminatesConsumersAfterDelivery: false) }
        #expect(eventually { received.all.count == 50 })
        #expect(received.all == Array(1...50))
        // The handler runs inside the delivery's transaction: the mark is visible once it commits.
        #expect(eventually { (try? center.consumers().first?.lastDelivered) == 50 })
    }

    @Test("versions posted while a consumer's process was down are delivered after it resumes, once each, in order")
    func deliveredAfterResume() throws {
        let dir = TemporaryDirectory("sig-down")
        let signal = SignalID()
        let consumer = ConsumerID(stableName: "down")
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "consumer")
            try center.register(signal, owner: "o", scope: .durable, id: consumer)
            try center.stop()
        }
        do {
            let poster = try SignalCenter.open(path: dir.path, processIdentity: "poster")
            for index in 1...10 { try poster.post(signal, value: index, terminatesConsumersAfterDelivery: false) }
            try poster.stop()
        }
        let center = try SignalCenter.open(path: dir.path, processIdentity: "consumer")
        let received = Received()
        center.attach(consumer, handler: .atLeastOnce { delivery in
            received.append(UInt64(try delivery.decode(Int.self)))
        })
        #expect(eventually { received.all.count == 10 })
        #expect(received.all == Array(1...10))
    }

    @Test("a latestOnly consumer that fell behind receives only the newest version")
    func latestOnly() throws {
        let dir = TemporaryDirectory("sig-latest")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o", coalescing: .latestOnly)
        for index in 1...5 { try center.post(signal, value: index, terminatesConsumersAfterDelivery: false) }
        let received = Received()
        center.attach(consumer, handler: .transactional { delivery, _ in received.append(delivery.version) })
        #expect(eventually { received.all == [5] })
        try center.post(signal, value: 6, terminatesConsumersAfterDelivery: false)
        #expect(eventually { received.all == [5, 6] })
    }

    @Test("a once consumer is removed after one delivery; the record goes when its last consumer does")
    func onceConsumer() throws {
        let dir = TemporaryDirectory("sig-once")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o", behaviour: .once)
        try center.post(signal, terminatesConsumersAfterDelivery: false)
        try center.post(signal, terminatesConsumersAfterDelivery: false)
        let received = Received()
        center.attach(consumer, handler: .transactional { delivery, _ in received.append(delivery.version) })
        #expect(eventually { (try? center.consumers().isEmpty) == true })
        #expect(received.all == [1])
        #expect(try center.signals().isEmpty)
    }

    @Test("untilTerminated consumers get every version until a terminating one, then all are removed")
    func untilTerminated() throws {
        let dir = TemporaryDirectory("sig-term")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let first = Received(), second = Received()
        let a = try center.register(signal, owner: "a"), b = try center.register(signal, owner: "b")
        center.attach(a, handler: .transactional { delivery, _ in first.append(delivery.version) })
        center.attach(b, handler: .atMostOnce { delivery in second.append(delivery.version) })
        try center.post(signal, terminatesConsumersAfterDelivery: false)
        try center.post(signal, terminatesConsumersAfterDelivery: false)
        try center.post(signal, terminatesConsumersAfterDelivery: true)
        #expect(eventually { (try? center.consumers().isEmpty) == true })
        #expect(first.all == [1, 2, 3])
        #expect(second.all == [1, 2, 3])
        #expect(try center.signals().isEmpty)
        expectSignalError(.unknownSignal) { _ = try center.versions(of: signal) }
    }

    @Test("run-scoped consumers are removed when the run stops and, after its center is dropped, by the next run; durable ones survive")
    func runCleanup() throws {
        let dir = TemporaryDirectory("sig-runs")
        let signal = SignalID()
        let first = try SignalCenter.open(path: dir.path, processIdentity: "service", runID: "run-1")
        try first.register(signal, owner: "stopped-run")
        try first.register(signal, owner: "durable", scope: .durable)
        try first.stop()
        #expect(try first.consumers().map(\.owner) == ["durable"])

        // run-2 ends without stopping (its center is dropped): a dead run of this process.
        do {
            let dropped = try SignalCenter.open(path: dir.path, processIdentity: "service", runID: "run-2")
            try dropped.register(signal, owner: "dropped-run")
        }
        let other = try SignalCenter.open(path: dir.path, processIdentity: "other-service", runID: "run-x")
        try other.register(signal, owner: "other-process")
        let next = try SignalCenter.open(path: dir.path, processIdentity: "service", runID: "run-3")
        #expect(Set(try next.consumers().map(\.owner)) == ["durable", "other-process"])
        withExtendedLifetime(other) {}
    }

    @Test("closing the store ends its signal centers first: the run's consumers are removed while the store is open, and the center's stop() afterwards does nothing")
    func closingTheStoreStopsItsCenters() throws {
        let dir = TemporaryDirectory("sig-close")
        let signal = SignalID()
        let store = try WorkflowStore.open(path: dir.path)
        let center = try SignalCenter.open(store: store, processIdentity: "service", runID: "run-1")
        try center.register(signal, owner: "run-consumer")
        try center.register(signal, owner: "durable", scope: .durable)
        try store.close()
        try center.stop()
        let reopened = try SignalCenter.open(path: dir.path, processIdentity: "other", runID: "run-2")
        #expect(try reopened.consumers().map(\.owner) == ["durable"])
    }

    @Test("a stopped center no longer waits for its store's close: a long-lived store keeps nothing of the centers opened and stopped on it")
    func stoppedCentersLeaveTheStore() throws {
        let dir = TemporaryDirectory("sig-stopped")
        let store = try WorkflowStore.open(path: dir.path)
        for run in 0..<50 {
            let center = try SignalCenter.open(store: store, processIdentity: "service", runID: "run-\(run)")
            try center.stop()
        }
        #expect(store.closingHandlerCount == 0)
        let open = try SignalCenter.open(store: store, processIdentity: "service", runID: "last")
        #expect(store.closingHandlerCount == 1)
        try store.close()
        #expect(store.closingHandlerCount == 0)
        try open.stop()
    }

    @Test("a consumer registered after versions were posted gets the retained ones; older versions are pruned")
    func retention() throws {
        let dir = TemporaryDirectory("sig-retain")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p", configuration: .init(keepLatest: 2))
        let signal = SignalID()
        for index in 1...5 { try center.post(signal, value: index, terminatesConsumersAfterDelivery: false) }
        #expect(try center.versions(of: signal).map(\.version) == [4, 5])
        let late = try center.register(signal, owner: "late")
        let received = Received()
        center.attach(late, handler: .transactional { delivery, _ in received.append(delivery.version) })
        #expect(eventually { received.all == [4, 5] })
        #expect(eventually { (try? center.pendingDeliveries().isEmpty) == true })
    }

    @Test("posting twice with one idempotency key posts once")
    func idempotentPost() throws {
        let dir = TemporaryDirectory("sig-idem")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        #expect(try center.post(signal, value: "a", idempotencyKey: "upload-7") == 1)
        #expect(try center.post(signal, value: "a", idempotencyKey: "upload-7") == 1)
        #expect(try center.post(signal, value: "b") == 2)
        #expect(try center.signals().first?.latestVersion == 2)
    }

    @Test("pending deliveries list each consumer's versions still to come")
    func pendingDeliveries() throws {
        let dir = TemporaryDirectory("sig-pending")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p")
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        for _ in 1...3 { try center.post(signal, terminatesConsumersAfterDelivery: false) }
        let pending = try center.pendingDeliveries()
        #expect(pending.map(\.consumer.id) == [consumer])
        #expect(pending.first?.versions == [1, 2, 3])
    }
}

/// Expects `body` to throw a ``SignalError`` of `kind`.
@discardableResult
func expectSignalError(_ kind: SignalError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> SignalError? {
    let error = #expect(throws: SignalError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
    return error
}
