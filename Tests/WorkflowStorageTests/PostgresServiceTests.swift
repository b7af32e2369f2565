#if Postgres
import DurableWorkflow
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import TestWorkflows
import Testing
import WorkflowLocks
import WorkflowPostgres
import WorkflowService

/// A service that starts beside another live host of the store (issue 59, point 11).
@Suite("WorkflowService on PostgreSQL beside another live host", .serialized, .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresServiceTests {
    @Test("the instances another live host runs are left to it: the resume's log line counts them apart, and none is failed")
    func heldElsewhere() async throws {
        let configuration = PostgresBackendTests.fresh()
        var other = configuration
        other.machine = "another-machine"
        let owner = WorkflowStore(backend: try PostgresStorage.open(other))
        let counters = DurableConfiguration(actions: DurableCounter.actions)
        let hosts = try (0..<3).map { try owner.start(DurableCounter(), id: "c\($0)", configuration: counters) }

        let log = CapturedLog()
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let service = WorkflowService(store: store, logger: log.logger, adoptionInterval: nil)
        service.register(DurableCounter.self, configuration: counters)
        let group = ServiceGroup(services: [service], logger: log.logger)
        let running = Task { try await group.run() }
        try await service.untilRunning()
        let line = try #require(log.all.first { $0.message == "resumed instances" })
        #expect(line.metadata["failed"] == "0" && line.metadata["resumed"] == "0" && line.metadata["held_elsewhere"] == "3", "\(line.metadata)")
        #expect(try store.instances(status: .failed).isEmpty)
        await group.triggerGracefulShutdown()
        try await running.value
        for host in hosts { await host.stopAndWait() }
        try owner.close()
    }
}
#endif
