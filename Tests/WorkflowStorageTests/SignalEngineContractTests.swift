import DurableWorkflow
import Foundation
import WorkflowLocks
import TestWorkflows
import Testing
import Workflow
import WorkflowSignals
import WorkflowStorage

/// Signals through the public API over every backend: handlers, workflow waits, and delivery
/// marks committed with log entries.
@Suite("Storage contract: signals through the public API on every backend")
struct SignalEngineContractTests {
    /// Whether `condition` holds within `timeout`, looking every millisecond. It sleeps as a task,
    /// not a thread: the work it waits for may need one of the cooperative pool's few threads.
    static func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return try condition()
    }

    @Test("a durable workflow waiting on a signal gets it once, as a logged .signal action, and not again after resume", arguments: BackendKind.allCases)
    func workflowWait(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let center = try SignalCenter.open(store: store, processIdentity: "service")
        let signal = SignalID(), configuration = AwaitUpload.configuration(center: center)
        do {
            let host = try store.start(AwaitUpload(signal: signal), id: "w", configuration: configuration)
            #expect(await Self.eventually { (try? center.consumers().count) == 1 })
            await host.stopAndWait()
        }
        try center.post(signal, value: "report.pdf")
        let host = try store.resume(id: "w", as: AwaitUpload.self, configuration: configuration)
        #expect(await Self.eventually { host.rendering.uploaded == "report.pdf" })
        #expect(await Self.eventually { (try? center.consumers().isEmpty) == true })
        await host.stopAndWait()
        #expect(try store.entries(of: "w").map(\.origin) == [.props, .signal])
        let again = try store.resume(id: "w", as: AwaitUpload.self, configuration: configuration)
        usleep(50_000)
        #expect(again.rendering == AwaitUpload.State(uploaded: "report.pdf", deliveries: 1))
        await again.stopAndWait()
        try center.stop()
    }

    @Test("each handler kind receives every version once, in order; a throwing transactional handler writes nothing and is retried", arguments: BackendKind.allCases)
    func handlers(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let center = try SignalCenter.open(store: fresh.store, processIdentity: "p", configuration: .init(retryDelay: .milliseconds(5)))
        let signal = SignalID(), table = try center.table(named: "seen")
        let transactional = try center.register(signal, owner: "t"), atLeast = try center.register(signal, owner: "a")
        let atMost = try center.register(signal, owner: "m")
        let seen = Lock<[String: [UInt64]]>([:]), failures = Lock(0)
        center.attach(transactional, handler: .transactional { delivery, txn in
            try txn.put([1], forKey: withUnsafeBytes(of: delivery.version.bigEndian) { Array($0) }, in: table)
            // The first try of version 2 fails: its write must not survive, and it comes again.
            if delivery.version == 2, failures.withLock({ $0 += 1; return $0 == 1 }) { throw CancellationError() }
            seen.withLock { $0["t", default: []].append(delivery.version) }
        })
        center.attach(atLeast, handler: .atLeastOnce { delivery in seen.withLock { $0["a", default: []].append(delivery.version) } })
        center.attach(atMost, handler: .atMostOnce { delivery in seen.withLock { $0["m", default: []].append(delivery.version) } })
        for index in 1...4 { try center.post(signal, value: index, terminatesConsumersAfterDelivery: index == 4) }
        #expect(await Self.eventually { (try? center.consumers().isEmpty) == true })
        #expect(seen.withLock { $0 } == ["t": [1, 2, 3, 4], "a": [1, 2, 3, 4], "m": [1, 2, 3, 4]])
        #expect(failures.withLock { $0 } == 2)
        #expect(try center.entries(in: table).count == 4)
        #expect(try center.signals().isEmpty, "the record goes with its last consumer")
        try center.stop()
    }
}
