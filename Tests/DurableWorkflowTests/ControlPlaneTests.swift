import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowTesting

/// A root that handles no cancel request: a request ends it at once.
struct Plain: Workflow, Codable, Sendable {
    struct State: Codable, Equatable, Sendable { var ticks = 0 }
    func makeInitialState() -> State { State() }
    func render(state: State, context: RenderContext<Plain>) -> State { state }
}

/// A cancellable finishing root with nothing to clean up: its handler's final output ends it.
struct Quick: FinishingWorkflow, CancellableWorkflow, Codable, Sendable {
    struct State: Codable, Equatable, Sendable { var reason: String? }
    func makeInitialState() -> State { State() }
    func render(state: State, context: RenderContext<Quick>) -> State { state }
    func cancellationRequested(_ request: CancellationRequest, state: inout State) -> String? {
        state.reason = request.reason
        return "cancelled: \(request.reason ?? "-")"
    }
    typealias Output = String
}

@Suite("The control plane in one process: cancel, terminate, pause, unpause and delete reach the running host (rule O2)")
struct ControlPlaneTests {
    func tags(_ store: WorkflowStore, _ id: String) throws -> [String] { try store.entries(of: id).map(\.actionTag) }

    @Test("a cancel request is logged once, the workflow and its children see it, clean up, and end the instance cancelled")
    func cancelHandled() async throws {
        let dir = TemporaryDirectory("control-cancel")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk()
        let host = try store.start(Booking(holdMilliseconds: 600_000), id: "b", configuration: Booking.configuration(desk: desk))
        await waitUntil { host.rendering.state.phase == .holding }

        let answer = try await store.cancel(id: "b", reason: "customer asked")
        #expect(answer.outcome == .applied, "\(answer)")
        let entries = try store.entries(of: "b")
        let cancels = entries.filter { $0.actionTag == ControlEntry.cancelTag }
        #expect(cancels.count == 1)
        #expect(cancels.first?.sequence == answer.sequence)
        #expect(cancels.first?.origin == .control)
        #expect(cancels.first.flatMap(ControlEntry.init)?.request == answer.request)
        #expect(try await host.completion == .cancelled)
        #expect(try store.instance(id: "b")?.status == .cancelled)
        // Cleanup once; the child saw the request (its output reached the booking).
        #expect(desk.made.map(\.verb) == ["reserve", "release"])
        let state = try store.state(of: "b", as: Booking.self, configuration: Booking.configuration(desk: desk)).rootState(as: Booking.State.self)
        #expect(state.released && state.childrenNotified == 1 && state.cancelRequested?.reason == "customer asked")
        // A second request finds it ended.
        let again = try await store.cancel(id: "b")
        #expect(again.outcome == .refused && again.request == 0)
    }

    @Test("controlState shows a cancellation while the workflow cleans up, and none once it ended the instance; a pause while paused")
    func controlStateOverALife() async throws {
        let dir = TemporaryDirectory("control-state")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk(latency: .milliseconds(700))
        let host = try store.start(Booking(holdMilliseconds: 600_000), id: "b", configuration: Booking.configuration(desk: desk))
        await waitUntil { host.rendering.state.phase == .holding }
        let before = try store.controlState(of: "b")
        #expect(!before.paused && before.cancellation == nil && before.lastRequest == 0)
        #expect(try await store.pause(id: "b").outcome == .applied)
        #expect(try store.controlState(of: "b").paused)
        #expect(try await store.unpause(id: "b").outcome == .applied)

        let answer = try await store.cancel(id: "b", reason: "customer asked", deadline: .seconds(60))
        // The release (a 700 ms call) runs: the cancellation is in progress, with its deadline.
        let during = try store.controlState(of: "b")
        #expect(during.cancellation?.reason == "customer asked" && during.cancellation?.deadline != nil && during.lastRequest == answer.request)
        #expect(try await host.completion == .cancelled)
        let after = try store.controlState(of: "b")
        #expect(after.cancellation == nil && !after.paused && after.lastRequest == 3)
    }

    @Test("a policy of .none keeps the request from the children; a root that handles none ends at once; a handler's final output ends it")
    func policies() async throws {
        let store = WorkflowStore.inMemory()
        let desk = BookingDesk()
        let booking = try store.start(Booking(holdMilliseconds: 600_000, propagates: false), id: "n", configuration: Booking.configuration(desk: desk))
        await waitUntil { booking.rendering.state.phase == .holding }
        try await store.cancel(id: "n")
        #expect(try await booking.completion == .cancelled)
        let state = try store.state(of: "n", as: Booking.self, configuration: Booking.configuration(desk: desk)).rootState(as: Booking.State.self)
        #expect(state.childrenNotified == 0 && state.released)

        let plain = try store.start(Plain(), id: "p", configuration: DurableConfiguration())
        let ended = try await store.cancel(id: "p", reason: "no longer needed")
        #expect(ended.outcome == .applied)
        await plain.stopAndWait()
        #expect(try store.instance(id: "p")?.status == .cancelled)
        #expect(try tags(store, "p") == [LogEntry.propsTag, ControlEntry.terminateTag])

        let quick = try store.start(Quick(), id: "q", configuration: DurableConfiguration())
        try await store.cancel(id: "q", reason: "fast")
        #expect(try await quick.completion == "cancelled: fast")
        #expect(try store.instance(id: "q")?.status == .cancelled)
        #expect(try tags(store, "q") == [LogEntry.propsTag, ControlEntry.cancelTag])
    }

    @Test("pause holds timers and sends in order, survives a restart, and the unpause applies them: the timer fires exactly once")
    func pauseHoldsTimers() async throws {
        let dir = TemporaryDirectory("control-pause")
        let store = try WorkflowStore.open(path: dir.path)
        let clock = ManualClock(), desk = BookingDesk()
        var configuration = Booking.configuration(desk: desk)
        configuration.host.clock = clock
        let host = try store.start(Booking(holdMilliseconds: 1000), id: "p", configuration: configuration)
        await waitUntil { host.rendering.state.phase == .holding && clock.sleeperCount == 1 }

        let paused = try await store.pause(id: "p", reason: "incident")
        #expect(paused.outcome == .applied)
        #expect(try store.instance(id: "p")?.status == .paused)
        let atPause = try store.entries(of: "p").count
        clock.advance(by: .seconds(5))
        try await Task.sleep(for: .milliseconds(100))
        #expect(try store.entries(of: "p").count == atPause, "nothing is applied while paused")
        #expect(host.rendering.state.timerFired == 0)
        #expect(try await store.pause(id: "p").outcome == .unchanged)

        // A restart keeps it paused: a resume holds it again, and resumeAll leaves it alone.
        await host.stopAndWait()
        #expect(try store.resumeAll(Booking.self, configuration: configuration).isEmpty)
        let resumed = try store.resume(id: "p", as: Booking.self, configuration: configuration)
        clock.advance(by: .seconds(1))
        try await Task.sleep(for: .milliseconds(100))
        #expect(try store.entries(of: "p").count == atPause)
        #expect(resumed.rendering.state.timerFired == 0)

        let unpaused = try await store.unpause(id: "p")
        #expect(unpaused.outcome == .applied)
        await waitUntil { resumed.rendering.state.phase == .done }
        #expect(try await resumed.completion == .confirmed)
        #expect(resumed.rendering.state.timerFired == 1)
        let tags = try tags(store, "p")
        let pause = try #require(tags.firstIndex(of: ControlEntry.pauseTag))
        #expect(tags[pause + 1] == ControlEntry.unpauseTag, "no entry between the pause and the unpause: \(tags)")
        #expect(try store.instance(id: "p")?.status == .completed)
    }

    @Test("terminate ends the instance at once: its completion says so, and it is never resumed")
    func terminate() async throws {
        let dir = TemporaryDirectory("control-terminate")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk()
        let host = try store.start(Booking(holdMilliseconds: 600_000), id: "t", configuration: Booking.configuration(desk: desk))
        await waitUntil { host.rendering.state.phase == .holding }
        let answer = try await store.terminate(id: "t", reason: "fraud")
        #expect(answer.outcome == .applied)
        do {
            _ = try await host.completion
            Issue.record("a terminated host does not finish")
        } catch {
            #expect(error.ending == .terminated(reason: "fraud"))
        }
        #expect(try store.instance(id: "t")?.status == .terminated)
        #expect(desk.made.map(\.verb) == ["reserve"])
        #expect(throws: DurableError.self) { try store.resume(id: "t", as: Booking.self, configuration: Booking.configuration(desk: desk)) }
    }

    @Test("without a live host the requester applies the request itself, with the same entries: cancel ends at once, pause and unpause change the status")
    func withoutHost() async throws {
        let dir = TemporaryDirectory("control-nohost")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk()
        for id in ["a", "b"] {
            let host = try store.start(Booking(holdMilliseconds: 600_000), id: id, configuration: Booking.configuration(desk: desk))
            await waitUntil { host.rendering.state.phase == .holding }
            await host.stopAndWait()
        }
        let cancelled = try await store.cancel(id: "a", reason: "support")
        #expect(cancelled.outcome == .applied && cancelled.answeredBy.contains("no live host"), "\(cancelled)")
        #expect(try store.instance(id: "a")?.status == .cancelled)
        let last = try #require(try store.entries(of: "a").last)
        #expect(last.actionTag == ControlEntry.terminateTag)

        #expect(try await store.pause(id: "b").outcome == .applied)
        #expect(try store.instance(id: "b")?.status == .paused)
        #expect(try await store.cancel(id: "b").outcome == .refused)
        #expect(try await store.unpause(id: "b").outcome == .applied)
        #expect(try store.instance(id: "b")?.status == .running)
        // Resumed, it runs from where it was, not paused.
        let resumed = try store.resume(id: "b", as: Booking.self, configuration: Booking.configuration(desk: desk))
        #expect(resumed.rendering.state.phase == .holding)
        #expect(try await store.terminate(id: "b").outcome == .applied)
        await resumed.stopAndWait()
    }

    @Test("a bulk verb over 300 hosts of one process is answered for each: the strict commits of their entries, on Dispatch's threads at once, never wait for a committer that needs one of those threads")
    func bulkInOneProcess() async throws {
        let dir = TemporaryDirectory("control-bulk")
        let store = try WorkflowStore.open(path: dir.path)
        let ids = (0..<300).map { "r\($0)" }
        var hosts: [WorkflowHost<Reminder>] = []
        for id in ids { hosts.append(try store.start(Reminder(), id: id, configuration: DurableConfiguration(actions: ActionRegistry(Reminder.Action.self)))) }
        let paused = try await store.control(.pause, ids: ids, timeout: .seconds(60))
        #expect(paused.count == 300 && paused.allSatisfy { $0.outcome == .applied })
        let unpaused = try await store.control(.unpause, ids: ids, timeout: .seconds(60))
        #expect(unpaused.allSatisfy { $0.outcome == .applied })
        for host in hosts { await host.stopAndWait() }
        #expect(try store.instances(status: .running).count == 300)
    }

    @Test("delete stops the live host and removes the instance; the store answers requests in order, each once")
    func deleteLive() async throws {
        let dir = TemporaryDirectory("control-delete")
        let store = try WorkflowStore.open(path: dir.path)
        let desk = BookingDesk()
        let host = try store.start(Booking(holdMilliseconds: 600_000), id: "d", configuration: Booking.configuration(desk: desk))
        await waitUntil { host.rendering.state.phase == .holding }
        let answer = try await store.delete(id: "d", timeout: .seconds(10))
        #expect(answer.outcome == .applied, "\(answer)")
        await waitUntil { (try? store.instance(id: "d")) == nil }
        do {
            _ = try await host.completion
        } catch {
            #expect(error.ending == .deleted)
        }
        #expect(try store.instance(id: "d") == nil)
    }
}
