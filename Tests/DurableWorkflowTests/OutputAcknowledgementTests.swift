import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import MetricsTestKit
import WorkflowLMDB
import WorkflowStorage

@Suite("Root outputs delivered until acknowledged")
struct OutputAcknowledgementTests {
    func configuration(snapshotEvery: Int? = nil) -> DurableConfiguration {
        var configuration = DurableConfiguration(actions: Checkout.actions, snapshotEvery: snapshotEvery)
        configuration.outputDelivery = .untilAcknowledged
        return configuration
    }

    /// The next `count` outputs of `host`, with their sequences.
    func next(_ count: Int, of iterator: inout AsyncStream<RootOutput<Checkout.Output>>.Iterator) async -> [(UInt64, Checkout.Output)] {
        var seen: [(UInt64, Checkout.Output)] = []
        while seen.count < count, let output = await iterator.next() { seen.append((output.sequence, output.value)) }
        return seen
    }

    @Test("a resumed host delivers again, first, the outputs its consumer had not acknowledged; acknowledged ones never",
          arguments: [nil, 2])
    func redelivery(snapshotEvery: Int?) async throws {
        let dir = TemporaryDirectory("outputs-ack")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Checkout(total: 100), id: "o", with: Checkout.Open(items: 1), configuration: configuration(snapshotEvery: snapshotEvery))
        var outputs = host.acknowledgeableOutputs.makeAsyncIterator()
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        let first = await next(2, of: &outputs)
        #expect(first.map(\.0) == [3, 4])
        #expect(first.map(\.1) == [.paidSoFar(1), .paidSoFar(2)])
        host.acknowledgeOutputs(through: 3)
        await host.flush()
        await host.stopAndWait()
        let entries = try store.entries(of: "o")
        #expect(entries.last?.isAcknowledgement == true && entries.last?.origin == .acknowledgement && entries.last?.sequence == 5)

        // Output 4 was not acknowledged: delivered again, before the new one (entry 6).
        let second = try store.resume(id: "o", as: Checkout.self, configuration: configuration(snapshotEvery: snapshotEvery))
        var again = second.acknowledgeableOutputs.makeAsyncIterator()
        #expect(second.rendering.state.paid == 2)
        try await second.rendering.pay.sendAndCommit(.init(amount: 1))
        let redelivered = await next(2, of: &again)
        #expect(redelivered.map(\.0) == [4, 6])
        #expect(redelivered.map(\.1) == [.paidSoFar(2), .paidSoFar(3)])
        await second.stopAndWait()

        // Not acknowledged again: both come again; then acknowledged, none does.
        let third = try store.resume(id: "o", as: Checkout.self, configuration: configuration(snapshotEvery: snapshotEvery))
        var thirdOutputs = third.acknowledgeableOutputs.makeAsyncIterator()
        #expect(await next(2, of: &thirdOutputs).map(\.0) == [4, 6])
        third.acknowledgeOutputs(through: 6)
        await third.stopAndWait()
        let fourth = try store.resume(id: "o", as: Checkout.self, configuration: configuration(snapshotEvery: snapshotEvery))
        var fourthOutputs = fourth.acknowledgeableOutputs.makeAsyncIterator()
        try await fourth.rendering.pay.sendAndCommit(.init(amount: 1))
        #expect(await next(1, of: &fourthOutputs).map(\.0) == [8])
        #expect(fourth.rendering.state.paid == 4)
        await fourth.stopAndWait()
        #expect(try store.verify(id: "o", as: Checkout.self, configuration: configuration()).isConsistent)
    }

    @Test("a resume starts from a snapshot taken when every output before it was acknowledged, and skips a later one that was not")
    func snapshots() async throws {
        let dir = TemporaryDirectory("outputs-ack-snapshot")
        let metrics = TestMetrics()
        let store = WorkflowStore(backend: try LMDBStorage.open(path: dir.path), metricsFactory: metrics)
        // Entries: 1 props, 2 open, 3 pay (output), 4 acknowledgement of 3: the snapshot at 4 has
        // every output acknowledged; 5 pay (output), 6 pay (output): the snapshot at 8 does not.
        let host = try store.start(Checkout(total: 100), id: "s", with: Checkout.Open(items: 1), configuration: configuration(snapshotEvery: 4))
        var outputs = host.acknowledgeableOutputs.makeAsyncIterator()
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        #expect(await next(1, of: &outputs).map(\.0) == [3])
        host.acknowledgeOutputs(through: 3)
        for _ in 0..<4 { try await host.rendering.pay.sendAndCommit(.init(amount: 1)) }
        await host.stopAndWait()
        #expect(try store.instance(id: "s")?.lastSnapshot == 8)

        let resumed = try store.resume(id: "s", as: Checkout.self, configuration: configuration(snapshotEvery: 4))
        #expect(resumed.rendering.state.paid == 5)
        // Replayed from the snapshot at 4 (entries 5 to 8), not from 8, and not from the start.
        #expect(try metrics.expectCounter("workflow_replayed_entries", [("store", store.path)]).totalValue == 4)
        var again = resumed.acknowledgeableOutputs.makeAsyncIterator()
        #expect(await next(4, of: &again).map(\.0) == [5, 6, 7, 8])
        await resumed.stopAndWait()
    }

    @Test("at most once (the default): a resumed host delivers no output of an entry written before")
    func atMostOnce() async throws {
        let store = WorkflowStore.inMemory()
        let configuration = DurableConfiguration(actions: Checkout.actions)
        let host = try store.start(Checkout(total: 100), id: "o", with: Checkout.Open(items: 1), configuration: configuration)
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        await host.stopAndWait()
        let resumed = try store.resume(id: "o", as: Checkout.self, configuration: configuration)
        var outputs = resumed.outputs.makeAsyncIterator()
        try await resumed.rendering.pay.sendAndCommit(.init(amount: 1))
        #expect(await outputs.next() == .paidSoFar(2))
        await resumed.stopAndWait()
    }
}
