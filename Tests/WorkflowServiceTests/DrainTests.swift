import Foundation
import TestSupport
import TestWorkflows
import Testing

/// A graceful shutdown drains the task attempts in flight (issue 59, point 1): a payments
/// service whose bank records every call by idempotency key and attempt, stopped with SIGTERM
/// while its calls are in flight, then restarted to finish.
@Suite("WorkflowService: SIGTERM drains the task attempts in flight", .serialized)
struct DrainTests {
    /// The scenario's two runs over a fresh store: 200 payments, SIGTERM 0.3 s after all started.
    func run(_ label: String, slowest: Int, drain: Int?) throws -> DrainScenario.Outcome {
        let dir = TemporaryDirectory(label)
        let scenario = DrainScenario(
            store: dir.path + "/store", ledger: dir.path + "/ledger", payments: 200, slowestMilliseconds: slowest, drainMilliseconds: drain,
            stopAfter: .milliseconds(300))
        try FileManager.default.createDirectory(atPath: scenario.store, withIntermediateDirectories: true)
        return try scenario.run()
    }

    @Test("200 payments, SIGTERM mid-call, a deadline longer than the slowest call: no call reaches the bank twice")
    func drainWithinDeadline() throws {
        let outcome = try run("drain-long", slowest: 2_000, drain: 10_000)
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        #expect(outcome.drained > 0, "the SIGTERM came while calls were in flight: \(outcome.drained) drained")
        #expect(outcome.abandoned == 0)
        #expect(outcome.repeatedCalls == 0, "\(outcome.repeatedCalls) calls reached the bank again after the restart")
        #expect(outcome.allFinished, "the second run finished \(outcome.finishedSecond)")
    }

    @Test("200 payments, SIGTERM mid-call, a deadline shorter than every call: exactly the abandoned calls run again, once each")
    func abandonAtDeadline() throws {
        let outcome = try run("drain-short", slowest: 4_000, drain: 200)
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        #expect(outcome.abandoned > 0, "the bank's calls take 1 to 4 s: the 200 ms deadline abandons some")
        #expect(outcome.repeatedCalls == outcome.abandoned, "\(outcome.repeatedCalls) repeated calls, \(outcome.abandoned) abandoned")
        #expect(outcome.shutdown < .seconds(3), "the shutdown took \(outcome.shutdown)")
        #expect(outcome.allFinished, "the second run finished \(outcome.finishedSecond)")
    }

    @Test("without a drain (drainDeadline nil), as before issue 59: calls in flight at SIGTERM reach the bank again after the restart")
    func withoutDrain() throws {
        let outcome = try run("drain-none", slowest: 2_000, drain: nil)
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        #expect(outcome.drained == -1 && outcome.abandoned == -1, "no drain reported")
        #expect(outcome.repeatedCalls > 0, "the calls in flight at the stop are dropped and made again")
        #expect(outcome.allFinished)
    }
}
