import DurableWorkflow
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB
import WorkflowService

/// Fork never creates work a service resumes (rule O3, issue 59 point 4).
@Suite("Forks are paused copies: no service runs one until it is unpaused", .serialized)
struct ForkTests {
    @Test("a fork of a running booking, in the store a service runs, is paused and left alone; unpaused, the service adopts it and its tasks run under keys of their own")
    func neverResumed() async throws {
        let dir = TemporaryDirectory("fork-service")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk()
        let service = WorkflowService(store: store, adoptionInterval: .milliseconds(100))
        service.register(Booking.self, configuration: Booking.configuration(desk: desk))
        let group = ServiceGroup(services: [service], logger: Logger(label: "fork"))
        let running = Task { try await group.run() }
        try await service.untilRunning()
        let booking = try await service.start(Booking(holdMilliseconds: 600_000), id: "b")
        await waitUntil { booking.rendering.state.phase == .holding }

        try store.fork(id: "b", at: 2, as: "b-fork")
        let fork = try #require(try store.instance(id: "b-fork"))
        #expect(fork.status == .paused)
        let last = try #require(try store.entries(of: "b-fork").last)
        #expect(last.actionTag == ControlEntry.pauseTag && ControlEntry(last)?.reason == "fork of b at sequence 2 of 2")
        try await Task.sleep(for: .milliseconds(600))
        #expect(service.runningInstances == ["b"], "six adoption rounds left the fork alone")
        #expect(desk.made.count == 1)

        let unpaused = try await store.unpause(id: "b-fork")
        #expect(unpaused.outcome == .applied)
        await waitUntil { service.runningInstances.contains("b-fork") }
        let copy = try #require(service.host(id: "b-fork", as: Booking.self))
        #expect(copy.rendering.state.phase == .holding)
        try await store.cancel(id: "b-fork")
        #expect(try await copy.completion == .cancelled)
        let keys = desk.made.map(\.key)
        #expect(keys.count == 2 && keys[1].hasPrefix("b-fork"), "\(keys)")
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("a fork into another store, and one whose last step is rerun with another payload, replays to the state that input makes")
    func intoAnotherStoreWithNewInput() async throws {
        let source = WorkflowStore.inMemory(name: "source"), scratch = WorkflowStore.inMemory(name: "scratch")
        let configuration = DurableConfiguration(actions: DurableCounter.actions)
        let host = try source.start(DurableCounter(), id: "c", configuration: configuration)
        for amount in [1, 2, 3] { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
        await host.stopAndWait()

        try source.fork(id: "c", at: 3, as: "c-copy", into: scratch)
        #expect(try source.instance(id: "c-copy") == nil)
        #expect(try scratch.instance(id: "c-copy")?.status == .paused)
        #expect(try scratch.state(of: "c-copy", as: DurableCounter.self, configuration: configuration).rootState(as: DurableCounter.State.self).count == 3)

        try source.fork(id: "c", at: 3, as: "c-rerun", replacing: .json(#"{"amount": 100}"#, actions: DurableCounter.actions))
        let rerun = try source.state(of: "c-rerun", as: DurableCounter.self, configuration: configuration).rootState(as: DurableCounter.State.self)
        #expect(rerun.count == 101)
        #expect(try source.entries(of: "c").count == 4, "the original is untouched")
        #expect(throws: DurableError.self) { try source.fork(id: "c", at: 1, as: "c-props", replacing: .payload([1])) }
    }
}

private func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + timeout
    while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
}
