#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres
import WorkflowStorage

/// A URL that names several servers (issue 60, point 4), as libpq takes it.
@Suite("PostgreSQL configuration: a URL that names a primary and its standbys")
struct PostgresServersURLTests {
    @Test("host:port,host:port... : the first is host and port, the others otherServers, in order (5432 when a port is left out); an empty server is refused")
    func servers() throws {
        let configuration = try #require(PostgresConfiguration(url: "postgres://app:secret@db-a:6000,db-b,10.0.0.3:6001/orders?schema=flows"))
        #expect(configuration.host == "db-a" && configuration.port == 6000)
        #expect(configuration.otherServers == [PostgresServer(host: "db-b"), PostgresServer(host: "10.0.0.3", port: 6001)])
        #expect(configuration.servers.count == 3)
        #expect(configuration.username == "app" && configuration.password == "secret")
        #expect(configuration.database == "orders" && configuration.schema == "flows")
        #expect(PostgresConfiguration(url: "postgres://app@db-a:6000/orders")?.otherServers == [])
        #expect(PostgresConfiguration(url: "postgres://app@db-a,,db-b/orders") == nil)
        #expect(PostgresConfiguration(url: "postgres://app@db-a,db-b:port/orders") == nil)
    }

    @Test("a store none of whose servers answers fails to open with .unavailable, naming them all")
    func noPrimary() throws {
        // Ports nothing listens on: no server answers at all.
        var configuration = PostgresConfiguration(host: "127.0.0.1", port: 1, schema: PostgresTestServer.freshSchema())
        configuration.otherServers = [PostgresServer(host: "127.0.0.1", port: 2)]
        let error = #expect(throws: StorageFailure.self) { try PostgresStorage.open(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.recovery.contains("127.0.0.1:1,127.0.0.1:2") == true, "\(String(describing: error))")
    }
}

/// The script that makes a primary and standby: `tools/lib/postgres-pair`, which tools/test names.
enum PostgresPair {
    static let script = ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES_PAIR"]
}

/// A store whose database fails over (issue 60, point 4): a primary with a synchronous standby
/// (`tools/lib/postgres-pair`, private, on loopback), the store's URL naming both servers, host
/// processes committing throughout; the primary is stopped hard and the standby promoted, again
/// and again, a new standby built each time where the old primary was.
@Suite("PostgreSQL failover: the primary stopped hard, the standby promoted, the hosts go on", .serialized,
       .enabled(if: PostgresPair.script != nil))
struct PostgresFailoverTests {
    struct PairFailed: Error, CustomStringConvertible {
        let command: String
        let output: [String]
        var description: String { "postgres-pair \(command) failed: \(output.suffix(5).joined(separator: "\n"))" }
    }

    /// Runs `postgres-pair DIR command`; returns the last line it printed.
    @discardableResult
    static func pair(_ dir: String, _ command: String) throws -> String {
        let child = try ChildProcess([dir, command], executable: try #require(PostgresPair.script), mergeStandardError: true)
        let lines = child.readRemainingLines(timeout: .seconds(120))
        guard try child.waitForExit() == 0 else { throw PairFailed(command: command, output: lines) }
        // What the script saw (the replication state before a failover), for a failure's story.
        for line in lines.dropLast() { print("postgres-pair \(command): \(line)") }
        return lines.last ?? ""
    }

    @Test(
        "three hosts awaiting durability; at 5 random moments the primary stopped hard and the standby promoted (failover), or the primary restarted in place (restart): nothing acknowledged lost or applied twice, every instance goes on",
        arguments: ["failover", "restart"]
    )
    func failovers(fault: String) async throws {
        let dir = TemporaryDirectory("pg-pair")
        let ports = try Self.pair(dir.path, "init").split(separator: " ").map(String.init)
        defer { _ = try? Self.pair(dir.path, "stop") }
        try #require(ports.count == 2, "postgres-pair init printed \(ports)")
        let url = "postgres://postgres@127.0.0.1:\(ports[0]),127.0.0.1:\(ports[1])/postgres?schema=\(fault)"
        let configuration = try #require(PostgresConfiguration(url: url))
        #expect(configuration.otherServers == [PostgresServer(host: "127.0.0.1", port: Int(ports[1])!)])

        let ids = (0..<9).map { "f\($0)" }
        do {
            let storage = try PostgresStorage.open(configuration)
            let store = WorkflowStore(backend: storage)
            for id in ids {
                let host = try store.start(DurableCounter(), id: id, configuration: DurableConfiguration(actions: DurableCounter.actions))
                await host.stopAndWait()
            }
            storage.close()
        }
        let hosts = try ["a", "b", "c"].map { try PostgresHostsTests.HostProcess(url: url, machine: "machine-\($0)", mode: "strict") }
        var ledger = PostgresHostsTests.Ledger()
        ledger.read(hosts, for: .seconds(2))
        #expect(Set(hosts.flatMap(\.running)) == Set(ids), "every instance runs somewhere: \(hosts.map(\.running))")

        var slowest: Duration = .zero
        for round in 0..<5 {
            ledger.read(hosts, for: .milliseconds(Int.random(in: 300...1_500)))
            let before = ledger.acknowledged
            let stopped = ContinuousClock.now
            try Self.pair(dir.path, fault)
            let promoted = ContinuousClock.now
            // The first acknowledgement read after the promotion (what the hosts printed before it,
            // still in the pipes, is read first and not counted).
            ledger.read(hosts, for: .milliseconds(1))
            let atPromotion = ledger.acknowledged.values.reduce(0, +)
            while ledger.acknowledged.values.reduce(0, +) == atPromotion, ContinuousClock.now - promoted < .seconds(30) {
                ledger.read(hosts, for: .milliseconds(10))
            }
            let firstCommit = ContinuousClock.now
            #expect(ledger.acknowledged.values.reduce(0, +) > atPromotion, "round \(round): nothing committed after the promotion; \(ledger.story.suffix(10))")
            print("\(fault) \(round): the server back in \(promoted - stopped), the first commit \(firstCommit - promoted) after")
            slowest = max(slowest, firstCommit - promoted)
            if fault == "failover" { try Self.pair(dir.path, "rebuild") }
            // Every instance goes on: each acknowledges more than it had before the failover.
            let deadline = ContinuousClock.now + .seconds(30)
            while !ids.allSatisfy({ (ledger.acknowledged[$0] ?? 0) > (before[$0] ?? 0) }), ContinuousClock.now < deadline {
                ledger.read(hosts, for: .milliseconds(50))
            }
            let stuck = ids.filter { (ledger.acknowledged[$0] ?? 0) <= (before[$0] ?? 0) }
            #expect(stuck.isEmpty, "round \(round): \(stuck) did not go on; \(ledger.story.suffix(10))")
        }
        #expect(slowest < .seconds(2) + .milliseconds(PostgresHostsTests.leaseMilliseconds),
                "the slowest first commit came \(slowest) after the server was back")
        print("\(fault): 5 rounds, the slowest first commit \(slowest) after the server was back")
        for host in hosts { host.child.kill() }
        for host in hosts {
            for line in host.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: host) }
            _ = try host.child.waitForExit()
        }
        // Replayed here once the hosts' leases ran out: every acknowledged action, each once, in a dense log.
        try await PostgresHostsTests.replayAndCheck(ids, acknowledged: ledger.acknowledged, configuration: configuration, verify: true)
    }
}
#endif
