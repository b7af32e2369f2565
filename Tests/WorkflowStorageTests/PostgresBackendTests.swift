#if Postgres
import DurableWorkflow
import Foundation
import PostgresNIO
import TestSupport
import TestWorkflows
import Testing
import Workflow
@testable import WorkflowPostgres
import WorkflowStorage
import WorkflowLocks

/// What only the PostgreSQL backend has: a server to reach, a schema with migrations, other
/// connections and processes that see what it acknowledged.
@Suite("PostgreSQL backend: the server, the schema, other connections and processes", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresBackendTests {
    /// A configuration of the test server with a schema of its own.
    static func fresh() -> PostgresConfiguration {
        var configuration = PostgresTestServer.configuration!
        configuration.schema = PostgresTestServer.freshSchema()
        return configuration
    }

    @Test("a server that cannot be reached is an .unavailable failure that names where and what to do")
    func unreachable() throws {
        var configuration = Self.fresh()
        configuration.port = try Self.closedPort()
        let error = #expect(throws: StorageFailure.self) { try PostgresStorage.open(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.location.contains("127.0.0.1:\(configuration.port)") == true)
        #expect(error?.recovery.contains("runs and accepts connections") == true, "\(String(describing: error))")
    }

    @Test("a schema name that is not a plain identifier is refused before anything is created")
    func badSchemaName() {
        var configuration = Self.fresh()
        configuration.schema = "x; DROP TABLE y"
        let error = #expect(throws: StorageFailure.self) { try PostgresStorage.open(configuration) }
        #expect(error?.kind == .invalidInput)
    }

    @Test("a store of a newer format is refused with .newerFormat; reopening a store of this format keeps its contents")
    func formats() throws {
        let configuration = Self.fresh()
        do {
            let storage = try PostgresStorage.open(configuration)
            _ = try storage.create(Records.new("kept", entries: 2))
        }
        let reopened = try PostgresStorage.open(configuration)
        #expect(try reopened.instance(id: "kept")?.lastSequence == 2)
        #expect(try reopened.statistics().formatVersion >= 1)
        try Self.sql("UPDATE \(configuration.schema).wf_meta SET value = 999 WHERE name = 'format'")
        let error = #expect(throws: StorageFailure.self) { try PostgresStorage.open(configuration) }
        #expect(error?.kind == .newerFormat, "\(String(describing: error))")
    }

    @Test("a store of format 6 is migrated at open: its signal versions read with no trace context, new posts keep theirs")
    func migratesFormatSix() throws {
        let configuration = Self.fresh(), schema = configuration.schema
        for statement in PostgresSchemaHistory.statements(through: 6) {
            _ = try Self.sql(PostgresSchema.sql(statement, schema: schema))
        }
        _ = try Self.sql("INSERT INTO \(schema).wf_meta (name, value) VALUES ('format', 6)")
        let signal = UUID()
        _ = try Self.sql("INSERT INTO \(schema).sig_signal (signal_id, latest, created_ns, updated_ns) VALUES ('\(signal)', 1, 1, 1)")
        _ = try Self.sql(
            "INSERT INTO \(schema).sig_version (signal_id, version, terminates, posted_ns, payload) VALUES ('\(signal)', 1, false, 1, '\\x6f6c64')")

        let storage = try PostgresStorage.open(configuration)
        #expect(try storage.statistics().formatVersion == PostgresSchema.format)
        let signals = try storage.signalStorage()
        var post = SignalPostRecord(signal: signal, payload: Array("new".utf8), terminates: false, idempotencyKey: nil)
        post.traceContext = TraceContext(["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"])
        #expect(try signals.post([post], keepLatest: 5, at: 2, durability: nil) == [2])
        let versions = try #require(try signals.versions(of: signal))
        #expect(versions.map { String(decoding: $0.payload, as: UTF8.self) } == ["old", "new"])
        #expect(versions.map(\.traceContext) == [TraceContext(), post.traceContext])
    }

    @Test("hosts opening a new store at once create it once, and each can use it")
    func concurrentOpens() async throws {
        let configuration = Self.fresh()
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<4 {
                group.addTask {
                    do {
                        let storage = try PostgresStorage.open(configuration)
                        return try storage.create(Records.new("host-\(index)")) == nil ? "taken" : "ok"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes == ["ok", "ok", "ok", "ok"])
        #expect(try PostgresStorage.open(configuration).instanceIDs() == ["host-0", "host-1", "host-2", "host-3"])
    }

    @Test("every action the engine acknowledged is on the server, seen from another connection, with dense sequences")
    func acknowledgedMeansCommitted() async throws {
        let configuration = Self.fresh()
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let counters = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let grouped = DurableConfiguration(mode: .grouped(maxBatch: 64, maxDelay: .milliseconds(2)), actions: DurableCounter.actions)
        let hosts = try (0..<8).map { try store.start(DurableCounter(), id: "c\($0)", configuration: $0 % 2 == 0 ? counters : grouped) }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for amount in 1...40 { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
                }
            }
        }
        // Counted by a connection of the test's own, not the store's.
        let rows = try Self.sql(
            """
            SELECT i.id, count(l.seq), COALESCE(max(l.seq), 0) FROM \(configuration.schema).wf_instance i
              LEFT JOIN \(configuration.schema).wf_log l ON l.instance_key = i.instance_key GROUP BY i.id ORDER BY i.id
            """)
        #expect(rows.count == 8)
        for row in rows {
            let (id, count, max) = try row.decode((String, Int64, Int64).self)
            #expect(count == 41 && max == 41, "\(id): \(count) rows, max \(max)")
        }
        for host in hosts { await host.stopAndWait() }
    }

    @Test("a store holds at most maximumConnections connections while its instances commit and others resume, each named after it")
    func connectionBound() async throws {
        var configuration = Self.fresh()
        configuration.maximumConnections = 3
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let grouped = DurableConfiguration(mode: .grouped(maxBatch: 64, maxDelay: .milliseconds(2)), actions: DurableCounter.actions)
        // Stopped instances, for resumeAll to take while the others commit.
        let stopped = try (0..<24).map { try store.start(DurableCounter(), id: "r\($0)", configuration: grouped) }
        await withTaskGroup(of: Void.self) { group in
            for host in stopped {
                group.addTask {
                    _ = await host.rendering.sink.sendAndWait(.init(amount: 1))
                    await host.stopAndWait()
                }
            }
        }
        let hosts = try (0..<40).map { try store.start(DurableCounter(), id: "c\($0)", configuration: grouped) }
        let sampler = try ConnectionSampler(applicationName: configuration.applicationName)
        // Readers on threads of their own, as a service's request handlers would be: more calls
        // at once than the store has connections.
        let reading = Lock(true), readers = DispatchGroup()
        for reader in 0..<4 {
            DispatchQueue.global().async(group: readers) {
                while reading.withLock({ $0 }) {
                    _ = try? storage.instance(id: "c\(reader)")
                    usleep(500)
                }
            }
        }
        let resumed = await withTaskGroup(of: Int.self) { group in
            for host in hosts {
                group.addTask {
                    for amount in 1...10 { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
                    return 0
                }
            }
            group.addTask {
                // resumeAll blocks its thread on the server: off the tasks' threads.
                let results = await withCheckedContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume(returning: try? store.resumeAll(DurableCounter.self, configuration: grouped)) }
                }
                var running = 0
                for result in results ?? [] {
                    guard let host = try? result.outcome.get() else { continue }
                    running += 1
                    await host.stopAndWait()
                }
                return running
            }
            return await group.reduce(0, +)
        }
        reading.withLock { $0 = false }
        readers.wait()
        let (peak, samples) = sampler.stop()
        #expect(resumed == 24)
        #expect(samples > 10, "the sampler ran \(samples) times")
        #expect(peak >= 2, "the store's connections, named \(configuration.applicationName), were seen at work (peak \(peak))")
        // maximumConnections bounds the calls in flight; the store's control dispatcher listens for
        // change notifications on one more.
        #expect(peak <= 3 + 1, "the store held \(peak) connections at once")
        await withTaskGroup(of: Void.self) { group in
            for host in hosts { group.addTask { await host.stopAndWait() } }
        }
    }

    @Test("a host whose store a newer library migrated while it ran fails its next commit with .newerFormat, which says to upgrade; nothing of that commit is written")
    func migratedUnderARunningHost() async throws {
        let configuration = Self.fresh(), schema = configuration.schema
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let counters = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let host = try store.start(DurableCounter(), id: "c", configuration: counters)
        for amount in 1...3 { #expect(await host.rendering.sink.sendAndWait(.init(amount: amount))) }
        // What a newer library's migration may do: a newer format, a procedure with other arguments.
        _ = try Self.sql("UPDATE \(schema).wf_meta SET value = \(PostgresSchema.format + 1) WHERE name = 'format'")
        _ = try Self.sql("DROP PROCEDURE \(schema).wf_commit")
        _ = try Self.sql("CREATE PROCEDURE \(schema).wf_commit(p_request bytea) LANGUAGE plpgsql AS $$ BEGIN END $$")
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 4)) == false)
        let failure = try #require(host.failure as? DurableError)
        #expect(failure.storageFailure?.kind == .newerFormat, "\(failure)")
        #expect(failure.storageFailure?.recovery.contains("newer library") == true, "\(failure)")
        await host.stopAndWait()
        let rows = try Self.sql("SELECT count(*) FROM \(schema).wf_log l JOIN \(schema).wf_instance i USING (instance_key) WHERE i.id = 'c'")
        #expect(try rows.first?.decode(Int64.self) == 4, "the creation and three actions, nothing of the fourth")
    }

    /// Counts, from a connection of its own on a thread of its own, the server's connections with
    /// an application name, as often as it can until stopped; keeps the most seen at once.
    final class ConnectionSampler: Sendable {
        private let state = Lock((stopped: false, peak: 0, samples: 0))
        private let done = DispatchSemaphore(value: 0)

        init(applicationName: String) throws {
            let logger = Logger(label: "sampler")
            let connection = try PostgresBackendTests.connect(logger: logger)
            Thread.detachNewThread { [state, done] in
                defer {
                    try? connection.close().wait()
                    done.signal()
                }
                while !state.withLock({ $0.stopped }) {
                    let query: PostgresQuery = "SELECT count(*) FROM pg_stat_activity WHERE application_name = \(applicationName)"
                    guard let row = try? connection.query(query, logger: logger).wait().rows.first,
                          let count = try? row.decode(Int64.self) else { continue }
                    state.withLock {
                        $0.peak = max($0.peak, Int(count))
                        $0.samples += 1
                    }
                }
            }
        }

        /// Stops sampling; the most connections seen at once, and how many samples were taken.
        func stop() -> (peak: Int, samples: Int) {
            state.withLock { $0.stopped = true }
            done.wait()
            return state.withLock { ($0.peak, $0.samples) }
        }
    }

    @Test(
        "instances sharing commits in a child process killed 5 times with SIGKILL: nothing acknowledged is lost or applied twice",
        arguments: ["strict", "grouped"]
    )
    func killedChild(mode: String) throws {
        let configuration = Self.fresh()
        let url = "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
        let instances = 4
        var acknowledged = [Int](repeating: 0, count: instances)
        func note(_ line: String) {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "ack", let index = Int(fields[1]), let value = Int(fields[2]) {
                acknowledged[index] = max(acknowledged[index], value)
            }
        }
        for round in 0..<TestLoad.scaled(5) {
            let child = try ChildProcess(["durable-counters-loop", url, mode, "\(instances)"], mergeStandardError: true)
            for index in 0..<instances {
                guard let line = child.readLine(timeout: .seconds(30)), line.hasPrefix("state \(index) ") else {
                    Issue.record("round \(round): the child did not resume t\(index): \(child.readRemainingLines(timeout: .seconds(2)))")
                    child.kill()
                    return
                }
                let fields = line.split(separator: " ").compactMap { Int($0) }
                #expect(fields[1] >= acknowledged[index], "round \(round): t\(index) resumed with \(fields[1]) applied, \(acknowledged[index]) acknowledged")
                #expect(fields[2] == fields[1] * (fields[1] + 1) / 2, "round \(round): t\(index) count \(fields[2]) is not 1+...+\(fields[1])")
            }
            #expect(child.readLine(timeout: .seconds(10)) == "ready")
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 50...300))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) { note(line) }
            child.kill()
            for line in child.readRemainingLines(timeout: .seconds(5)) { note(line) }
            #expect(try child.waitForExit() == 128 + SIGKILL)
        }
        #expect(acknowledged.allSatisfy { $0 > 0 }, "every instance had acknowledged actions: \(acknowledged)")
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let counters = DurableConfiguration(actions: DurableCounter.actions)
        for index in 0..<instances {
            let host = try store.resume(id: "t\(index)", as: DurableCounter.self, configuration: counters)
            let state = host.rendering.state
            #expect(state.applied >= acknowledged[index])
            #expect(state.count == state.applied * (state.applied + 1) / 2)
            #expect(try store.entries(of: "t\(index)").map(\.sequence) == Array(1...UInt64(state.applied + 1)))
            host.stop()
            let report = try store.verify(id: "t\(index)", as: DurableCounter.self, configuration: counters)
            #expect(report.isConsistent, "\(String(describing: report.problem))")
        }
    }

    @Test("while a child process runs an instance, this process cannot take it; once the child is killed, it can")
    func ownershipAcrossProcesses() throws {
        let configuration = Self.fresh()
        let url = "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
        let child = try ChildProcess(["durable-counters-loop", url, "strict", "1"], mergeStandardError: true)
        defer { child.kill() }
        #expect(child.readLine(timeout: .seconds(30))?.hasPrefix("state 0 ") == true)
        #expect(child.readLine(timeout: .seconds(10)) == "ready")
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let counters = DurableConfiguration(actions: DurableCounter.actions)
        let error = #expect(throws: DurableError.self) { try store.resume(id: "t0", as: DurableCounter.self, configuration: counters) }
        #expect(error?.kind == .instanceInUse, "\(String(describing: error))")
        child.kill()
        _ = child.readRemainingLines(timeout: .seconds(5))
        _ = try child.waitForExit()
        let host = try store.resume(id: "t0", as: DurableCounter.self, configuration: counters)
        #expect(host.rendering.state.applied > 0)
        host.stop()
    }

    @Test(
        "a server that goes down fails the waiting send with a typed .unavailable storage error; after it restarts, the instance is listed to take over and resumes with every acknowledged action",
        .enabled(if: ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES_CTL"] != nil)
    )
    func serverDown() async throws {
        let configuration = Self.fresh()
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let counters = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let host = try store.start(DurableCounter(), id: "c", configuration: counters)
        for amount in 1...5 { #expect(await host.rendering.sink.sendAndWait(.init(amount: amount))) }
        try Self.control("stop")
        var restarted = false
        defer { if !restarted { try? Self.control("start") } }
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 6)) == false)
        let failure = try #require(host.failure as? DurableError)
        #expect(failure.kind == .storage, "\(failure)")
        #expect(failure.storageFailure?.kind == .unavailable, "\(failure)")
        await host.stopAndWait()
        try Self.control("start")
        restarted = true
        // The stopped host could not clear its claim while the server was down: the store clears
        // it before listing, so the instance is not left held by this live process with nobody
        // running it.
        #expect(try storage.instancesToTakeOver() == ["c"])
        // The same store value: its broken connections were dropped, new ones are opened.
        let resumed = try store.resume(id: "c", as: DurableCounter.self, configuration: counters)
        #expect(resumed.rendering.state.applied == 5)
        #expect(await resumed.rendering.sink.sendAndWait(.init(amount: 6)))
        #expect(try store.instance(id: "c")?.lastSequence == 7)
        await resumed.stopAndWait()
    }

    @Test(
        "a claim or a create whose answer is lost (its connection cut after the server committed it) still gives this process the instance: it is not left held by a live process with nobody running it",
        // A free instance is claimed by wf_claim_free, one held by a dead process by wf_claim.
        arguments: ["wf_claim_free", "wf_claim", "wf_create"]
    )
    func claimAnswerLost(procedureName: String) async throws {
        let configuration = Self.fresh()
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let counters = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let resuming = procedureName != "wf_create"
        if resuming {
            let first = try store.start(DurableCounter(), id: "c", configuration: counters)
            #expect(await first.rendering.sink.sendAndWait(.init(amount: 1)))
            await first.stopAndWait()
        }
        if procedureName == "wf_claim" {
            // Held by a process that is gone: the resume takes it over.
            let gone = InstanceClaim(pid: Int32.max - 7, processStart: 1, token: 1)
            guard case .claimed = try storage.claim(id: "c", as: gone, takingOverIf: { _ in false }) else {
                Issue.record("the free instance must be claimed")
                return
            }
        }

        // The procedure commits, then waits; its connection is cut while it waits, so the claim
        // is made and its answer lost.
        let (started, cut) = try Self.losingTheAnswer(of: procedureName, schema: configuration.schema, by: { pid in
            try Self.sql("SELECT pg_terminate_backend(\(pid))")
        }, during: {
            Result {
                resuming ? try store.resume(id: "c", as: DurableCounter.self, configuration: counters)
                    : try store.start(DurableCounter(), id: "c", configuration: counters)
            }
        })
        #expect(cut == "cut")
        let host = try started.get()
        let applied = resuming ? 1 : 0
        #expect(host.rendering.state.applied == applied)
        #expect(await host.rendering.sink.sendAndWait(.init(amount: applied + 1)))
        await host.stopAndWait()
        #expect(try storage.instancesToTakeOver() == ["c"], "released when the host stopped")
        #expect(try store.instance(id: "c")?.lastSequence == UInt64(applied + 2))
    }

    @Test(
        "a claim whose answer is lost because the server went down, and cannot be read again: the resume fails, and once the server is back the instance is listed to take over and resumes",
        .enabled(if: ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES_CTL"] != nil)
    )
    func claimAnswerLostServerDown() async throws {
        let configuration = Self.fresh()
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let counters = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let first = try store.start(DurableCounter(), id: "c", configuration: counters)
        #expect(await first.rendering.sink.sendAndWait(.init(amount: 1)))
        await first.stopAndWait()

        var restarted = false
        defer { if !restarted { try? Self.control("start") } }
        let (resumed, cut) = try Self.losingTheAnswer(of: "wf_claim_free", schema: configuration.schema, by: { _ in
            try Self.control("stop")
        }, during: {
            Result { try store.resume(id: "c", as: DurableCounter.self, configuration: counters) }
        })
        #expect(cut == "cut")
        #expect(throws: DurableError.self) { try resumed.get() }
        try Self.control("start")
        restarted = true
        // The claim the server kept is cleared before the listing, so the instance is not left
        // held by this live process with nobody running it.
        #expect(try storage.instancesToTakeOver() == ["c"])
        let host = try store.resume(id: "c", as: DurableCounter.self, configuration: counters)
        #expect(host.rendering.state.applied == 1)
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 2)))
        await host.stopAndWait()
    }

    // MARK: Helpers

    /// Runs `body` while the store's procedure `procedure` commits, then waits: once a call waits,
    /// the procedure is put back and `cut` is run with the waiting backend's pid (to lose the
    /// call's answer). Returns what `body` returned and "cut", or why nothing was cut.
    static func losingTheAnswer<Result>(
        of procedure: String, schema: String, by cut: @escaping @Sendable (Int32) throws -> Void, during body: () -> Result
    ) throws -> (Result, String?) {
        let original = try #require(try sql("SELECT pg_get_functiondef('\(schema).\(procedure)'::regproc)").first?.decode(String.self))
        #expect(original.components(separatedBy: "COMMIT;").count == 2)
        try sql(original.replacingOccurrences(of: "COMMIT;", with: "COMMIT; PERFORM pg_sleep(60);"))
        let outcome = Lock<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline {
                    let waiting = try sql(
                        "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%\(procedure)%' AND pid <> pg_backend_pid()")
                    if let pid = try waiting.first?.decode(Int32.self) {
                        try sql(original)
                        try cut(pid)
                        outcome.withLock { $0 = "cut" }
                        return
                    }
                    usleep(10_000)
                }
                outcome.withLock { $0 = "the call never waited" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }
        let result = body()
        done.wait()
        return (result, outcome.withLock { $0 })
    }

    /// Stops (as a crash would) or starts the test server.
    static func control(_ action: String) throws {
        let script = ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES_CTL"]!
        let child = try ChildProcess([script, action], executable: "/bin/bash", mergeStandardError: true)
        let output = child.readRemainingLines(timeout: .seconds(60))
        #expect(try child.waitForExit() == 0, "\(script) \(action): \(output)")
    }

    /// A loopback port where nothing listens.
    static func closedPort() throws -> Int {
        let socket = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        let port = socket.localAddress!.port!
        try socket.close().wait()
        return port
    }

    /// A connection of the test's own to the test server (the caller closes it).
    static func connect(logger: Logger) throws -> PostgresConnection {
        let server = PostgresTestServer.configuration!
        return try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configuration: .init(host: server.host, port: server.port, username: server.username, password: server.password,
                                 database: server.database, tls: .disable),
            id: 1, logger: logger
        ).wait()
    }

    /// Runs `statement` on a connection of the test's own and returns its rows.
    @discardableResult
    static func sql(_ statement: String) throws -> [PostgresRow] {
        let logger = Logger(label: "test")
        let connection = try connect(logger: logger)
        defer { try? connection.close().wait() }
        return Array(try connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).wait().rows)
    }
}
/// What the PostgreSQL backend writes to its logger.
@Suite("PostgreSQL backend: its log lines")
struct PostgresLogLineTests {
    @Test("an error whose description spans lines (the server's message, then its context) is logged on one line, all of it kept: a host's lease renewal that fails while its connections are cut")
    func errorOnOneLine() {
        struct Spread: Error, CustomDebugStringConvertible {
            var debugDescription: String { "PSQLError(message: renew failed\nCONTEXT: PL/pgSQL function wf_host_renew line 7\r\nat assignment)" }
        }
        let line = loggedError(Spread())
        #expect(!line.contains { $0.isNewline })
        #expect(line == "PSQLError(message: renew failed CONTEXT: PL/pgSQL function wf_host_renew line 7 at assignment)")
    }
}

#endif
