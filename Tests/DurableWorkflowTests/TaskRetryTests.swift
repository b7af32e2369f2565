import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowTesting

@Suite("Tasks that fail: retries, timeouts and outcomes in the log, under a manual clock")
struct TaskRetryTests {
    func configuration(_ clock: ManualClock, _ gateway: Gateway) -> DurableConfiguration {
        var configuration = DurableConfiguration(actions: Payment.actions, host: .init(clock: clock))
        configuration.host.provide(gateway)
        return configuration
    }

    @Test("failed attempts are retried after the policy's backoff, each logged; the value reaches the workflow; replay calls nothing")
    func retriesThenSucceeds() async throws {
        let dir = TemporaryDirectory("task-retry")
        let clock = ManualClock(), start = clock.now()
        let gateway = Gateway([.fail(.init(code: 1)), .fail(.init(code: 2)), .succeed])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "p", configuration: configuration(clock, gateway))
        await waitUntil { host.rendering.progress?.failedAttempts == 1 && clock.sleeperCount == 1 }
        #expect(host.rendering.progress?.retryAt == start + .seconds(1))
        clock.advance(by: .seconds(1))
        await waitUntil { host.rendering.progress?.failedAttempts == 2 && clock.sleeperCount == 1 }
        #expect(host.rendering.progress?.retryAt == start + .seconds(3))
        #expect(host.rendering.progress?.lastFailure?.message == "gateway error 2")
        clock.advance(by: .seconds(2))
        await waitUntil { host.rendering.state.receipt != nil }
        #expect(host.rendering.state.receipt == "receipt-3")
        #expect(gateway.calls.map(\.number) == [1, 2, 3])
        let keys = Set(gateway.calls.map(\.idempotencyKey))
        #expect(keys.count == 1 && (keys.first??.hasPrefix("p~")) == true, "\(keys)")
        let entries = try store.entries(of: "p")
        #expect(entries.map(\.origin) == [.props, .worker, .worker, .worker])
        #expect(Set(entries.dropFirst().map(\.actionTag)) == [TaskWorkflow<String>.Event.tag])
        await host.stopAndWait()

        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(clock, gateway))
        #expect(resumed.rendering.state.receipt == "receipt-3")
        try await Task.sleep(for: .milliseconds(20))
        #expect(gateway.calls.count == 3)
        await resumed.stopAndWait()
    }

    @Test("the last failure reaches the workflow when attempts run out, or at once for an error the policy does not retry")
    func finalFailure() async throws {
        let dir = TemporaryDirectory("task-fail")
        let clock = ManualClock()
        let store = try WorkflowStore.open(path: dir.path)

        let exhausted = Gateway([.fail(.init(code: 1)), .fail(.init(code: 2))])
        let first = try store.start(Payment(maximumAttempts: 2), id: "out", configuration: configuration(clock, exhausted))
        await waitUntil { first.rendering.progress?.failedAttempts == 1 && clock.sleeperCount == 1 }
        clock.advance(by: .seconds(1))
        await waitUntil { first.rendering.state.failure != nil }
        #expect(first.rendering.state.failure == TaskFailure(attempt: 2, errorType: String(reflecting: Gateway.GatewayError.self),
                                                            message: "gateway error 2"))
        await first.stopAndWait()

        let final = Gateway([.fail(.init(code: 7))])
        let second = try store.start(Payment(finalCodes: [7]), id: "final", configuration: configuration(clock, final))
        await waitUntil { second.rendering.state.failure != nil }
        #expect(second.rendering.state.failure?.attempt == 1)
        #expect(final.calls.count == 1)
        await second.stopAndWait()
    }

    @Test("an attempt that outlives its timeout fails as timed out (even one that ignores cancellation) and is retried")
    func timeout() async throws {
        let dir = TemporaryDirectory("task-timeout")
        let clock = ManualClock()
        let gateway = Gateway([.hang(cooperative: false), .succeed])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(timeoutSeconds: 5), id: "t", configuration: configuration(clock, gateway))
        await waitUntil { gateway.calls.count == 1 && clock.sleeperCount == 1 }
        clock.advance(by: .seconds(5))
        await waitUntil { host.rendering.progress?.failedAttempts == 1 && clock.sleeperCount == 1 }
        #expect(host.rendering.progress?.lastFailure?.timedOut == true)
        clock.advance(by: .seconds(1))
        // The second attempt runs with its own timeout timer, and succeeds at once.
        await waitUntil { host.rendering.state.receipt != nil }
        #expect(host.rendering.state.receipt == "receipt-2")
        await host.stopAndWait()
    }

    @Test("a host stopped between attempts resumes the task at its next attempt, at the logged time, under the same idempotency key")
    func resumesBetweenAttempts() async throws {
        let dir = TemporaryDirectory("task-resume")
        let clock = ManualClock(), start = clock.now()
        let gateway = Gateway([.fail(.init(code: 1)), .succeed])
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Payment(), id: "r", configuration: configuration(clock, gateway))
        await waitUntil { host.rendering.progress?.failedAttempts == 1 && clock.sleeperCount == 1 }
        await host.stopAndWait()
        await waitUntil { clock.sleeperCount == 0 }

        let resumed = try store.resume(id: "r", as: Payment.self, configuration: configuration(clock, gateway))
        #expect(resumed.rendering.progress?.failedAttempts == 1)
        await waitUntil { clock.sleeperCount == 1 }
        #expect(gateway.calls.count == 1)
        clock.advance(to: start + .seconds(1))
        await waitUntil { resumed.rendering.state.receipt != nil }
        #expect(resumed.rendering.state.receipt == "receipt-2")
        #expect(gateway.calls.map(\.number) == [1, 2])
        #expect(gateway.calls[0].idempotencyKey == gateway.calls[1].idempotencyKey)
        await resumed.stopAndWait()
    }

    @Test("a task's actions not in the registry are refused where render declares the task (rule O4): the start throws, no attempt runs")
    func unregisteredTask() async throws {
        let dir = TemporaryDirectory("task-unregistered")
        let clock = ManualClock()
        let gateway = Gateway([.succeed])
        var configuration = DurableConfiguration(actions: ActionRegistry(Payment.Charged.self), host: .init(clock: clock))
        configuration.host.provide(gateway)
        let store = try WorkflowStore.open(path: dir.path)
        // Before issue 59 the attempt ran, its report was discarded as not loggable, and the
        // workflow waited forever with nothing logged.
        #expect { try store.start(Payment(), id: "u", configuration: configuration) } throws: {
            ($0 as? DurableError)?.kind == .actionNotRegistered
        }
        try await Task.sleep(for: .milliseconds(20))
        #expect(gateway.calls.isEmpty)
        #expect(try store.entries(of: "u").count == 1)
        #expect(try store.instance(id: "u")?.status == .failed)
    }
}
