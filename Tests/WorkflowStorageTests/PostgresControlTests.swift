#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres

/// The control plane on PostgreSQL (issue 59, point 2): the booking service of
/// `ControlServiceTests` is a host process of its own; this process, another host of the same
/// schema, makes the requests, which reach the owner through the database's notifications.
@Suite("The control plane reaches the host process that owns an instance (PostgreSQL)", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresControlTests {
    @Test("cancel, pause and terminate, each at 100 random moments or more, from another host: as on LMDB, each applied once by the owner")
    func fromAnotherHost() async throws {
        let dir = TemporaryDirectory("pg-control")
        let configuration = PostgresBackendTests.fresh()
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let perVerb = TestLoad.scaled(150)
        let outcome = try await ControlScenario(location: PostgresUpgradeSuiteTests.url(configuration), ledger: dir.child("ledger"),
                                                perVerb: perVerb).run(controller: store)
        #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(20).joined(separator: "\n"))")
        print("control scenario: answers \(outcome.answers.sorted { $0.key < $1.key }), statuses \(outcome.statuses.sorted { $0.key.rawValue < $1.key.rawValue })")
        for verb in ["cancel", "pause", "terminate"] {
            // Each verb reaches at least 100 bookings while they run (the others have ended: refused).
            #expect((outcome.answers["\(verb) applied"] ?? 0) >= TestLoad.scaled(100), "\(outcome.answers)")
        }
        #expect(outcome.answers["pause applied"] == outcome.answers["unpause applied"], "\(outcome.answers)")
        try store.close()
    }
}
#endif
