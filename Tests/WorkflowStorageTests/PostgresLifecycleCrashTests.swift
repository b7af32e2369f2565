#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres

/// The lifecycle's crash test on PostgreSQL: the first action and the completed status are
/// written by the commit procedures, under kills of the process that runs the checkouts.
@Suite("PostgreSQL lifecycle crashes", .serialized, .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresLifecycleCrashTests {
    @Test("killed while 8 tasks start and finish checkouts: no instance without its first action, every finish acknowledged completed, the rest finish after resumeAll")
    func killWhileStartingAndFinishing() async throws {
        let configuration = PostgresBackendTests.fresh()
        let url = "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
        var ledger = CheckoutCrashLedger()
        let children = try ledger.runKilledChildren(store: url, mode: "grouped", rounds: TestLoad.scaled(4))
        #expect(children.isEmpty, "\(children)")
        let storage = try PostgresStorage.open(configuration)
        defer { storage.close() }
        let problems = try await ledger.problems(
            in: WorkflowStore(backend: storage), configuration: DurableConfiguration(mode: .grouped, actions: Checkout.actions))
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }
}
#endif
