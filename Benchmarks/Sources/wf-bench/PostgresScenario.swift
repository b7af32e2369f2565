import DurableWorkflow
import Foundation
import PostgresNIO
import Synchronization
import Workflow
import WorkflowPostgres

/// The engine on PostgreSQL against raw inserts of the same rows through the same client, in one
/// run: `CALL`s of a procedure that inserts a batch of 100-byte rows and commits (what one
/// engine commit costs the server at its least), one row and N rows per commit. Needs a server:
/// `WORKFLOW_BENCH_POSTGRES` (tools/bench starts one, with fsync on); skipped without it.
///
/// - per-commit `strict` (one instance, one action per commit) against 1 row per commit;
/// - request/response `grouped`, N instances each with a client looping `await sendAndWait`,
///   against N rows per commit; with 100 instances that ceiling is paired with the engine run by
///   run, and the engine is also measured against the same clients awaiting raw group `CALL`s
///   with no engine (``RawGroupCommitter``), paired as well, and against those clients with
///   each `CALL` also fencing their rows as issue 24's design asks (the least such a commit
///   costs); the CPU per action and per record of each, the process's and the server's (when it
///   runs on this machine: ``CPUClock/postgresServer(backendPID:)``);
/// - request/response `strict`, 100 instances against 1;
/// - several hosts: 1,000 instances spread over 1, 2 and 4 host processes (`grouped`, a client
///   each), against as many processes each committing its share of the rows per raw `CALL`,
///   each run pairing the engine's processes with the raw ones.
///
/// The failover time is its own scenario (``PostgresFailoverScenario``, `postgres-failover`).
///
/// On one machine, the server shares the two cores with the engine: the ratios say what the
/// engine adds per commit, not what several machines would reach.
enum PostgresScenario {
    static let name = "postgres"
    static let instanceCounts = [1, 10, 100]
    /// The instance count whose request/response is also measured against the same shape on raw
    /// PostgreSQL.
    static let shapeInstances = 100
    static let hostCounts = [1, 2, 4]
    static let severalHostsInstances = 1_000
    static let resumeAllInstances = 2_000
    /// How long a child process runs its load before it measures.
    static let warmUp = 3.0

    static var url: String? {
        ProcessInfo.processInfo.environment["WORKFLOW_BENCH_POSTGRES"] ?? ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"]
    }

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        guard let url, let server = PostgresConfiguration(url: url) else {
            FileHandle.standardError.write(Data("wf-bench: postgres skipped: set WORKFLOW_BENCH_POSTGRES to a server URL (tools/bench starts one)\n".utf8))
            return []
        }
        defer { BenchSchemas.dropAll(on: server) }
        let window = max(0.25, 1.0 * scale)
        var results: [Measurement] = []
        var raw: [Int: Measurement] = [:]
        let rawTable = try RawTable(server: server)
        func commitsOf(_ count: Int) -> Int { max(20, Int(Double(min(500, 20_000 / count)) * scale)) }
        // The shape's count gets its ceiling paired with the engine, run by run (below).
        for count in instanceCounts where count != shapeInstances {
            let result = try rawTable.measure(rowsPerCommit: count, commits: commitsOf(count), runs: runs)
            raw[count] = result
            results.append(result)
        }
        for count in instanceCounts where count != shapeInstances {
            var result = try requestResponse(.grouped, instances: count, server: server, window: window, runs: runs)
            if let ceiling = raw[count] { result = result.relative(to: ceiling) }
            results.append(result)
        }
        let paired = try groupedAgainstShape(server: server, table: rawTable, commits: commitsOf(shapeInstances), window: window, runs: runs)
        raw[shapeInstances] = paired.ceiling
        results += [paired.ceiling, paired.shape, paired.second?.shape, paired.engine, paired.paired, paired.second?.paired].compactMap { $0 }
        results += paired.cpu
        // The same with one commit in flight at a time: what overlapping commits bring.
        if let ceiling = raw[100] {
            results.append(try requestResponse(.grouped, instances: 100, server: server, window: window, runs: runs, concurrentCommits: 1)
                .relative(to: ceiling))
        }
        for hosts in hostCounts {
            results.append(contentsOf: try severalHosts(hosts, instances: severalHostsInstances, server: server, window: window, runs: runs))
        }
        results.append(contentsOf: try resumeAll(instances: max(10, Int(Double(resumeAllInstances) * scale)), server: server, table: rawTable, runs: runs))
        var strictOne: Measurement?
        for count in [1, 100] {
            var result = try requestResponse(.strict, instances: count, server: server, window: window, runs: runs)
            if let strictOne { result = result.relative(to: strictOne) } else if let ceiling = raw[1] {
                strictOne = result
                result = result.relative(to: ceiling)
            }
            results.append(result)
        }
        return results
    }

    /// `count` counters started in a new schema, and their store's storage.
    static func startInstances(
        _ mode: DurableConfiguration.Mode, count: Int, server: PostgresConfiguration, concurrentCommits: Int? = nil
    ) throws -> (storage: PostgresStorage, hosts: [WorkflowHost<CodableCounter>]) {
        var configuration = server
        if let concurrentCommits { configuration.concurrentCommits = concurrentCommits }
        configuration.schema = BenchSchemas.new("wfbench_")
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let hosts = try (0..<count).map { index in
            try store.start(CodableCounter(), id: "i\(index)", configuration: benchConfiguration(mode))
        }
        return (storage, hosts)
    }

    /// Request/response in `grouped` with ``shapeInstances`` instances, each run paired with the
    /// ceiling (`commits` raw `CALL`s of as many rows) and the same shape on raw PostgreSQL
    /// (``rawRequestResponse(clients:server:table:)``, as many commits in flight as the
    /// engine's), and the same clients with the engine's fence
    /// (``fencedRequestResponse(clients:server:table:)``), all measured right before it: the
    /// ceiling's figure, each shape's, the engine's against the ceiling, and the engine's against
    /// each shape (each the median of the runs' ratios); and the process's and the server's CPU
    /// per record of each shape and per action of the engine.
    static func groupedAgainstShape(
        server: PostgresConfiguration, table: RawTable, commits: Int, window: Double, runs: Int
    ) throws -> PairedRuns {
        let count = shapeInstances
        let (storage, hosts) = try startInstances(.grouped, count: count, server: server)
        defer {
            for host in hosts { host.stop() }
            storage.close()
        }
        let shape = try rawRequestResponse(clients: count, server: server, table: table)
        defer { shape.stop() }
        let fenced = try fencedRequestResponse(clients: count, server: server, table: table)
        defer { fenced.stop() }
        return try shape.pairedWithEngine(
            name, clients: count, window: window, runs: runs, shapeMetric: "rows_per_s",
            shapeDetail: "raw PostgreSQL: \(count) clients each looping await one row's group CALL, up to \(server.concurrentCommits) in flight, for \(window) s",
            engineDetail: "\(count) instances on PostgreSQL, a client each looping await sendAndWait for \(window) s",
            ceiling: ("raw-\(count)-per-commit", RawTable.detail(rowsPerCommit: count, commits: commits) + ", right before each run of the shape and the engine",
                      table.commitRuns(rowsPerCommit: count, commits: commits)),
            second: ("fenced", "raw PostgreSQL: the same clients, each CALL also holding its owner's advisory lock shared and inserting only the rows whose owner row names that owner and whose key's row of the sequence before is in the log (the fence of store format 16), up to \(server.concurrentCommits) in flight, for \(window) s", fenced),
            clocks: [.process] + [try table.serverClock()].compactMap { $0 }
        ) { ServiceScenario.acknowledgedPerSecond(hosts, window: window) }
    }

    static func requestResponse(
        _ mode: DurableConfiguration.Mode, instances count: Int, server: PostgresConfiguration, window: Double, runs: Int,
        concurrentCommits: Int? = nil
    ) throws -> Measurement {
        let modeName = if case .strict = mode { "strict" } else { "grouped" }
        let (storage, hosts) = try startInstances(mode, count: count, server: server, concurrentCommits: concurrentCommits)
        defer {
            for host in hosts { host.stop() }
            storage.close()
        }
        return Measurement.measure(
            name, "request-response-\(modeName)-\(count)" + (concurrentCommits == 1 ? "-one-commit-at-a-time" : ""), metric: "actions_per_s",
            runs: runs,
            detail: "\(count) instances on PostgreSQL, a client each looping await sendAndWait for \(window) s"
                + (concurrentCommits.map { ", \($0) commit(s) in flight" } ?? "")
        ) {
            ServiceScenario.acknowledgedPerSecond(hosts, window: window)
        }
    }

    /// A restart: `resumeAll` of `instances` instances, each with a snapshot and a log tail to
    /// replay after it (as the recovery scenario's), against raw claims and reads of as many
    /// instances (``RawTable/claimAndReadEach(instances:on:owner:)``) on as many connections at
    /// once as `resumeAll` uses; each run pairs the two.
    static func resumeAll(instances total: Int, server: PostgresConfiguration, table: RawTable, runs: Int) throws -> [Measurement] {
        var configuration = server
        configuration.schema = BenchSchemas.new("wfbench_")
        let storage = try PostgresStorage.open(configuration)
        defer { storage.close() }
        let store = WorkflowStore(backend: storage)
        try RecoveryScenario.fill(store, instances: total)
        try table.insertLogs(instances: total, entries: RecoveryScenario.entries)
        // Filling left the tables with dead rows (every commit rewrote an instance's row) and no
        // statistics: vacuumed and analyzed now, the server's autovacuum does not take them on
        // in the middle of the measured runs, sharing the two cores with them.
        try table.vacuum(["\(configuration.schema).wf_instance", "\(configuration.schema).wf_log", "\(configuration.schema).wf_snapshot",
                          "\(table.schema).raw_log", "\(table.schema).raw_owner"])
        // As many connections as resumeAll resumes instances at once.
        let connections = try (0..<storage.concurrentCalls).map { _ in try RawTable(server: server, schema: table.schema) }
        var owner: Int64 = 0
        return try RecoveryScenario.pairedResumeAll(
            name, "resume-all-\(total)",
            detail: "resumeAll of \(total) instances (\(RecoveryScenario.entries) entries each, a snapshot at \(RecoveryScenario.snapshotAt)) on PostgreSQL",
            raw: ("raw-claim-and-read-each-\(total)",
                  "raw PostgreSQL: per instance a synced CALL updating its owner row, then one SELECT of its \(RecoveryScenario.entries) rows, on \(connections.count) connections at once"),
            total: total, runs: runs, ceiling: {
                owner += 1
                return try table.claimAndReadEach(instances: total, on: connections, owner: owner)
            }, store: { store })
    }

    /// `instances` spread over `hosts` processes of this executable on one store, each with a
    /// client per instance looping `await sendAndWait` (`grouped`), against `hosts` processes each
    /// inserting its share of rows per raw `CALL`; each run measures both, one after the other.
    static func severalHosts(_ hosts: Int, instances: Int, server: PostgresConfiguration, window: Double, runs: Int) throws -> [Measurement] {
        let share = instances / hosts
        let rawTable = try RawTable(server: server)
        var rawSamples: [Double] = [], engineSamples: [Double] = []
        for run in 0..<runs {
            rawSamples.append(try ChildProcesses.runTogether((0..<hosts).map { host in
                ["--postgres-raw-child", url!, rawTable.schema, "\(host)", "\(share)", "\(window)"]
            }))
            let schema = BenchSchemas.new("wfbench_")
            engineSamples.append(try ChildProcesses.runTogether((0..<hosts).map { host in
                ["--postgres-host-child", url!, schema, "r\(run)h\(host)-", "\(share)", "\(window)"]
            }))
        }
        let raw = Measurement(
            name, "raw-\(share)-per-commit-on-\(hosts)", metric: "rows_per_s", samples: rawSamples,
            detail: "raw PostgreSQL: \(hosts) processes, each CALLing a procedure that inserts \(share) rows and commits, for \(window) s")
        let engine = Measurement(
            name, "several-hosts-grouped-\(instances)-on-\(hosts)", metric: "actions_per_s", samples: engineSamples,
            detail: "\(instances) instances over \(hosts) host processes on one store, a client each looping await sendAndWait for \(window) s")
        return [raw, engine.relative(to: raw, pairing: engineSamples, with: rawSamples)]
    }

    /// A host process of ``severalHosts(_:instances:server:window:runs:)``: starts `count`
    /// instances named `prefix`0... on the store in `schema`, then measures.
    static func runHostChild(_ arguments: [String]) throws {
        guard var configuration = PostgresConfiguration(url: arguments[0]) else { throw ChildProcesses.ChildFailed(arguments: arguments) }
        configuration.schema = arguments[1]
        let prefix = arguments[2], count = Int(arguments[3])!, window = Double(arguments[4])!
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let hosts = try (0..<count).map { index in
            try store.start(CodableCounter(), id: "\(prefix)\(index)", configuration: benchConfiguration(.grouped))
        }
        // It runs its load before it says it is ready, so that the window measures the steady
        // state of a process that has run for a while, as the in-process cases (run after others)
        // do, not how a new process's first rounds form (docs/PERFORMANCE.md, "PostgreSQL").
        _ = ServiceScenario.acknowledgedPerSecond(hosts, window: warmUp)
        ChildProcesses.serve { ServiceScenario.acknowledgedPerSecond(hosts, window: window) }
        for host in hosts { host.stop() }
        storage.close()
    }

    /// A raw process of ``severalHosts(_:instances:server:window:runs:)``: CALLs the raw table's
    /// procedure with `rows` rows of its own keys until the window is over; prints rows per second.
    static func runRawChild(_ arguments: [String]) throws {
        guard let server = PostgresConfiguration(url: arguments[0]) else { throw ChildProcesses.ChildFailed(arguments: arguments) }
        let table = try RawTable(server: server, schema: arguments[1])
        let process = Int64(arguments[2])!, rows = Int(arguments[3])!, window = Double(arguments[4])!
        _ = try table.rowsPerSecond(keysOf: process, rows: rows, window: warmUp)
        try ChildProcesses.serve { try table.rowsPerSecond(keysOf: process, rows: rows, window: window) }
    }

    /// A table of (key, sequence, record) and a procedure that inserts a batch and commits.
    struct RawTable {
        let connection: PostgresConnection
        let schema: String
        let logger = Logger(label: "wf-bench")

        /// Creates the table in a new schema, or (`schema` given) uses the one another process created.
        init(server: PostgresConfiguration, schema existing: String? = nil) throws {
            schema = existing ?? BenchSchemas.new("wfbench_raw_")
            connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configuration: .init(host: server.host, port: server.port, username: server.username, password: server.password,
                                     database: server.database, tls: .disable),
                id: 1, logger: logger
            ).wait()
            if existing != nil { return }
            for statement in [
                "CREATE SCHEMA \(schema)",
                "CREATE TABLE \(schema).raw_log (k bigint NOT NULL, seq bigint NOT NULL, rec bytea NOT NULL, PRIMARY KEY (k, seq))",
                "CREATE TABLE \(schema).raw_owner (k bigint PRIMARY KEY, owner bigint NOT NULL)",
                """
                CREATE PROCEDURE \(schema).raw_claim(p_k bigint, p_owner bigint) LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE \(schema).raw_owner SET owner = p_owner WHERE k = p_k;
                    COMMIT;
                END $$
                """,
                """
                CREATE PROCEDURE \(schema).raw_insert(p_k bigint[], p_seq bigint[], p_rec bytea[]) LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO \(schema).raw_log (k, seq, rec) SELECT * FROM unnest(p_k, p_seq, p_rec);
                    COMMIT;
                END $$
                """,
                "CREATE TABLE \(schema).raw_fence (k bigint PRIMARY KEY, owner bigint NOT NULL)",
                """
                CREATE PROCEDURE \(schema).raw_fenced(p_k bigint[], p_seq bigint[], p_rec bytea[], p_owner bigint[]) LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM set_config('enable_seqscan', 'off', true);
                    PERFORM pg_advisory_xact_lock_shared(p_owner[1]);
                    INSERT INTO \(schema).raw_log (k, seq, rec)
                    SELECT q.k, q.seq, q.rec FROM unnest(p_k, p_seq, p_rec, p_owner) AS q(k, seq, rec, owner)
                     CROSS JOIN LATERAL (SELECT f.owner FROM \(schema).raw_fence f WHERE f.k = q.k LIMIT 1) f
                     WHERE f.owner = q.owner
                       AND (SELECT true FROM \(schema).raw_log l WHERE l.k = q.k AND l.seq = q.seq - 1 LIMIT 1);
                    COMMIT;
                END $$
                """,
            ] {
                _ = try connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).wait()
            }
        }

        /// Rows inserted per second in `commits` calls of `rowsPerCommit` rows (one key per row
        /// of a call, as one entry of each of that many instances).
        func measure(rowsPerCommit: Int, commits: Int, runs: Int) throws -> Measurement {
            try Measurement.measure(
                PostgresScenario.name, "raw-\(rowsPerCommit)-per-commit", metric: "rows_per_s", runs: runs,
                detail: Self.detail(rowsPerCommit: rowsPerCommit, commits: commits), commitRuns(rowsPerCommit: rowsPerCommit, commits: commits))
        }

        /// A run of ``measure(rowsPerCommit:commits:runs:)``, rows per second, for each call of the
        /// closure (each run's rows after those of the run before). One closure per row count:
        /// the keys are the count's.
        func commitRuns(rowsPerCommit: Int, commits: Int) -> () throws -> Double {
            let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
            let keys = (0..<rowsPerCommit).map { Int64(rowsPerCommit) << 32 | Int64($0) }, records = Array(repeating: record, count: rowsPerCommit)
            var sequence: Int64 = 0
            return { [self] in
                let elapsed = try seconds {
                    for _ in 0..<commits {
                        sequence += 1
                        let sequences = Array(repeating: sequence, count: rowsPerCommit)
                        _ = try connection.query("CALL \(unescaped: schema).raw_insert(\(keys), \(sequences), \(records))", logger: logger).wait()
                    }
                }
                return Double(rowsPerCommit * commits) / elapsed
            }
        }

        static func detail(rowsPerCommit: Int, commits: Int) -> String {
            "raw PostgreSQL: \(commits) CALLs inserting \(rowsPerCommit) rows of \(RawLMDBScenario.recordSize) B and committing"
        }

        /// Inserts `entries` rows for each of `instances` keys (above those `measure` uses), and
        /// an owner row for each.
        func insertLogs(instances: Int, entries: Int) throws {
            let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
            for instance in 0..<instances {
                let keys = Array(repeating: Self.logKey(instance), count: entries), sequences = (1...Int64(entries)).map { $0 }
                _ = try connection.query(
                    "CALL \(unescaped: schema).raw_insert(\(keys), \(sequences), \(Array(repeating: record, count: entries)))", logger: logger
                ).wait()
            }
            _ = try connection.query(
                "INSERT INTO \(unescaped: schema).raw_owner SELECT \(Self.logKey(0)) + i, 0 FROM generate_series(0, \(instances - 1)) AS i",
                logger: logger
            ).wait()
        }

        /// Adds an owner row (`owner`) for each of `keys` to the fenced procedure's table, and a
        /// row of sequence 0 to the log (a new instance's first entry), so that a key's rows go on from 1.
        func addFences(keys: [Int64], owner: Int64) throws {
            _ = try connection.query(
                "INSERT INTO \(unescaped: schema).raw_fence (k, owner) SELECT unnest(\(keys)), \(owner)", logger: logger
            ).wait()
            _ = try connection.query(
                "INSERT INTO \(unescaped: schema).raw_log (k, seq, rec) SELECT unnest(\(keys)), 0, '\\x00'::bytea", logger: logger
            ).wait()
            try vacuum(["\(schema).raw_fence"])
        }

        /// The server's CPU time (``CPUClock/postgresServer(backendPID:)``), `nil` when it runs
        /// where this process cannot see it.
        func serverClock() throws -> CPUClock? {
            let rows = try connection.query("SELECT pg_backend_pid()", logger: logger).wait()
            guard let pid = try rows.first?.decode(Int32.self) else { return nil }
            return CPUClock.postgresServer(backendPID: pid)
        }

        /// Vacuums and analyzes `tables` (qualified names).
        func vacuum(_ tables: [String]) throws {
            _ = try connection.query(PostgresQuery(unsafeSQL: "VACUUM ANALYZE " + tables.joined(separator: ", ")), logger: logger).wait()
        }

        /// Instances per second that `tables` (connections to this table's schema) claim and read
        /// as a resume does, each instance on one of them, all of them at once: a synced `CALL`
        /// that updates the instance's owner row and commits, then one query of its rows (as
        /// `insertLogs` made them).
        func claimAndReadEach(instances: Int, on tables: [RawTable], owner: Int64) throws -> Double {
            let next = Atomic(0), rows = Atomic(0), failure = Mutex<(any Error)?>(nil)
            @Sendable func claimAndRead(on table: RawTable) {
                do {
                    while true {
                        let instance = next.add(1, ordering: .relaxed).oldValue
                        guard instance < instances else { return }
                        let key = Self.logKey(instance)
                        _ = try table.connection.query("CALL \(unescaped: table.schema).raw_claim(\(key), \(owner))", logger: table.logger).wait()
                        let read = try table.connection.query(
                            "SELECT seq, rec FROM \(unescaped: table.schema).raw_log WHERE k = \(key) ORDER BY seq", logger: table.logger
                        ).wait().rows.count
                        rows.add(read, ordering: .relaxed)
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
            let elapsed = seconds {
                // A thread per connection, as resumeAll's (a Dispatch pool runs no more blocked
                // workers at once than there are cores).
                let done = DispatchGroup()
                for table in tables {
                    done.enter()
                    Thread.detachNewThread {
                        claimAndRead(on: table)
                        done.leave()
                    }
                }
                done.wait()
            }
            if let error = failure.withLock({ $0 }) { throw error }
            guard rows.load(ordering: .relaxed) > 0 else { throw BenchFailure("the raw logs are empty") }
            return Double(instances) / elapsed
        }

        private static func logKey(_ instance: Int) -> Int64 { Int64(1) << 48 | Int64(instance) }

        /// Rows inserted per second by CALLs of `rows` rows (keys of `process`, a sequence each
        /// call) until `window` seconds are over.
        func rowsPerSecond(keysOf process: Int64, rows: Int, window: Double) throws -> Double {
            let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
            let keys = (0..<rows).map { process << 32 | Int64($0) }, records = Array(repeating: record, count: rows)
            // Each run of the scenario starts where the table's sequences end for these keys.
            var sequence = try connection.query("SELECT COALESCE(max(seq), 0) FROM \(unescaped: schema).raw_log WHERE k = \(keys[0])", logger: logger)
                .wait().rows.first?.decode(Int64.self) ?? 0
            var calls = 0
            let start = ContinuousClock.now, deadline = start + .milliseconds(Int(window * 1_000))
            while ContinuousClock.now < deadline {
                sequence += 1
                let sequences = Array(repeating: sequence, count: rows)
                _ = try connection.query("CALL \(unescaped: schema).raw_insert(\(keys), \(sequences), \(records))", logger: logger).wait()
                calls += 1
            }
            let elapsed = ContinuousClock.now - start
            return Double(calls * rows) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }
}
