#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres

/// The service's own takeover loop on PostgreSQL (issue 59, point 5): three host processes of
/// three "machines"; one is killed 20 times, and the others take its instances over once its
/// lease runs out, as the store spreads them, with no caller polling for them.
@Suite("WorkflowService takes over a dead host's instances by itself (PostgreSQL)", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresTakeoverTests {
    @Test("three host processes, one killed with SIGKILL 20 times: its instances are taken over within the lease and a moment, and tick on; every log replays")
    func twentyKills() async throws {
        let configuration = PostgresBackendTests.fresh()
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let outcome = try await TakeoverScenario(location: PostgresUpgradeSuiteTests.url(configuration), instances: 30,
                                                 kills: TestLoad.isLight ? 4 : 20, leaseMilliseconds: 1_000).run(store: store)
        #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(10).joined(separator: "\n"))")
        #expect(outcome.recoveries.allSatisfy { $0 < .seconds(5) }, "\(outcome.recoveries)")
        print("takeover (PostgreSQL): recoveries \(outcome.recoveries.sorted().map { "\($0)" }.joined(separator: ", "))")
        try store.close()
    }
}
#endif
