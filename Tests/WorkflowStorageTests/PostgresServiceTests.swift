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

/// Keeps every line logged through it, with its metadata.
private final class LogLines: Sendable {
    let lines = Lock<[(message: String, metadata: Logger.Metadata)]>([])

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            log.lines.withLock { $0.append(("\(event.message)", event.metadata ?? [:])) }
        }
    }
}

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

        let log = LogLines()
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let service = WorkflowService(store: store, logger: log.logger, adoptionInterval: nil)
        service.register(DurableCounter.self, configuration: counters)
        let group = ServiceGroup(services: [service], logger: log.logger)
        let running = Task { try await group.run() }
        try await service.untilRunning()
        let line = try #require(log.lines.withLock { $0 }.first { $0.message == "resumed instances" })
        #expect(line.metadata["failed"] == "0" && line.metadata["resumed"] == "0" && line.metadata["held_elsewhere"] == "3", "\(line.metadata)")
        #expect(try store.instances(status: .failed).isEmpty)
        await group.triggerGracefulShutdown()
        try await running.value
        for host in hosts { await host.stopAndWait() }
        try owner.close()
    }
}
#endif
