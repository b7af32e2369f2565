#if Postgres
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres

/// The drain on PostgreSQL (issue 59, point 1): the payments service of `DrainTests` over a
/// schema of its own.
@Suite("WorkflowService on PostgreSQL: SIGTERM drains the task attempts in flight", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresDrainTests {
    @Test("200 payments, SIGTERM mid-call: with a long deadline no call repeats; with a short one exactly the abandoned ones do", arguments: [10_000, 200])
    func drain(deadline: Int) throws {
        let dir = TemporaryDirectory("pg-drain")
        let scenario = DrainScenario(
            store: PostgresUpgradeSuiteTests.url(PostgresBackendTests.fresh()), ledger: dir.path + "/ledger", payments: 200,
            slowestMilliseconds: deadline > 2_000 ? 2_000 : 4_000, drainMilliseconds: deadline, stopAfter: .milliseconds(300))
        let outcome = try scenario.run()
        #expect(outcome.problems.isEmpty, "\(outcome.problems)")
        if deadline > 2_000 {
            #expect(outcome.drained > 0 && outcome.abandoned == 0, "\(outcome.drained) drained, \(outcome.abandoned) abandoned")
            #expect(outcome.repeatedCalls == 0)
        } else {
            #expect(outcome.abandoned > 0)
            #expect(outcome.repeatedCalls == outcome.abandoned, "\(outcome.repeatedCalls) repeated calls, \(outcome.abandoned) abandoned")
        }
        #expect(outcome.allFinished, "the second run finished \(outcome.finishedSecond)")
    }
}
#endif
