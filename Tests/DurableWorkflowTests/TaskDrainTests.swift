import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowTesting

/// `WorkflowHost.drain(within:)`: a graceful stop lets a task's attempt in flight finish and
/// commits its outcome, abandons (and logs) one still running at the deadline, and starts no new
/// attempt (issue 59, point 1); `stopIfNoAttemptsInFlight()`, a handover's stop, never abandons one.
@Suite("Draining a host: task attempts in flight finish and commit, or are logged abandoned and run again once")
struct TaskDrainTests {
    func configuration(_ gateway: Gateway, clock: any WorkflowClock = SystemClock()) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: .grouped, actions: Payment.actions, host: .init(clock: clock))
        configuration.host.provide(gateway)
        return configuration
    }

    func payload(_ entry: LogEntry) -> String { String(decoding: entry.payload, as: UTF8.self) }

    @Test("an attempt that returns within the deadline: its outcome is committed before the drain returns, and a resume calls nothing")
    func drainsWithinDeadline() async throws {
        let dir = TemporaryDirectory("drain-within")
        let gateway = Gateway([.succeedAfter(.milliseconds(200))])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "p", configuration: configuration(gateway))
        await waitUntil { gateway.calls.count == 1 }
        let report = await host.drain(within: .seconds(10))
        #expect(report == DrainReport(drained: 1, abandoned: 0))
        // Committed by the drain: another reader of the store sees it before the host stops.
        #expect(try store.entries(of: "p").contains { payload($0).contains("succeeded") })
        await host.stopAndWait()

        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(gateway))
        #expect(resumed.rendering.state.receipt == "receipt-1")
        try await Task.sleep(for: .milliseconds(50))
        #expect(gateway.calls.count == 1)
        await resumed.stopAndWait()
    }

    @Test("a handover's stop: refused while an attempt is in flight (the host goes on and commits its outcome), done once none is; the resume calls nothing again")
    func stopsOnlyWithoutAttemptsInFlight() async throws {
        let dir = TemporaryDirectory("stop-if-idle")
        let gateway = Gateway([.succeedAfter(.milliseconds(300))])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "p", configuration: configuration(gateway))
        await waitUntil { gateway.calls.count == 1 }
        #expect(await !host.stopIfNoAttemptsInFlight(), "stopped with an attempt in flight")
        await waitUntil { host.rendering.state.receipt != nil }
        #expect(host.rendering.state.receipt == "receipt-1", "the host did not go on after the refused stop")
        #expect(await host.stopIfNoAttemptsInFlight())
        #expect(try store.entries(of: "p").contains { payload($0).contains("succeeded") })

        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(gateway))
        #expect(resumed.rendering.state.receipt == "receipt-1")
        try await Task.sleep(for: .milliseconds(50))
        #expect(gateway.calls.count == 1)
        await resumed.stopAndWait()
    }

    @Test("an attempt still running at the deadline (deaf to cancellation): logged abandoned, the state unchanged; a resume runs it once more under the same key and attempt number")
    func abandonsAtDeadline() async throws {
        let dir = TemporaryDirectory("drain-abandon")
        let gateway = Gateway([.hang(cooperative: false), .succeed])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "p", configuration: configuration(gateway))
        await waitUntil { gateway.calls.count == 1 }
        let started = ContinuousClock.now
        let report = await host.drain(within: .milliseconds(100))
        #expect(report == DrainReport(drained: 0, abandoned: 1))
        #expect(ContinuousClock.now - started < .seconds(2))
        let last = try #require(try store.entries(of: "p").last)
        #expect(last.actionTag == TaskWorkflow<String>.Event.tag && payload(last).contains("abandoned"), "\(payload(last))")
        #expect(host.rendering.progress?.failedAttempts == 0)
        await host.stopAndWait()

        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(gateway))
        await waitUntil { resumed.rendering.state.receipt != nil }
        #expect(resumed.rendering.state.receipt == "receipt-1")
        #expect(gateway.calls.map(\.number) == [1, 1])
        #expect(Set(gateway.calls.map(\.idempotencyKey)).count == 1)
        await resumed.stopAndWait()
    }

    @Test("a draining host starts no attempt: a retry due during the drain waits for the resume")
    func startsNothingNew() async throws {
        let dir = TemporaryDirectory("drain-nothing-new")
        let clock = ManualClock()
        let gateway = Gateway([.fail(.init(code: 1)), .succeed])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "p", configuration: configuration(gateway, clock: clock))
        await waitUntil { host.rendering.progress?.failedAttempts == 1 && clock.sleeperCount == 1 }
        let report = await host.drain(within: .seconds(5))
        #expect(report == DrainReport())
        clock.advance(by: .seconds(1))
        try await Task.sleep(for: .milliseconds(100))
        #expect(gateway.calls.count == 1, "the retry started while the host drained")
        await host.stopAndWait()

        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(gateway, clock: clock))
        await waitUntil { resumed.rendering.state.receipt != nil }
        #expect(gateway.calls.map(\.number) == [1, 2])
        await resumed.stopAndWait()
    }
}

/// Render tests of a workflow that runs a task (issue 59, point 10).
@Suite("Render-testing a task: expectTask")
struct TaskRenderTests {
    @Test("a task's progress is given with TaskWorkflow.State's public initializer, and its outcome becomes the workflow's action")
    func expectTask() throws {
        let charged = try Payment().renderTester()
            .expectTask(String.self, key: "charge", progress: TaskWorkflow<String>.State(failedAttempts: 1), producing: .success("r-9"))
            .render { rendering in #expect(rendering.progress?.failedAttempts == 1) }
        #expect(charged.state.receipt == "r-9" && charged.state.failure == nil)
        let failure = TaskFailure(attempt: 3, errorType: "GatewayError", message: "declined")
        let declined = try Payment().renderTester().expectTask(String.self, key: "charge", producing: .failure(failure)).render()
        #expect(declined.state.receipt == nil && declined.state.failure == failure)
    }
}
