import DurableWorkflow
import Foundation
import PostgresNIO
import Workflow
import WorkflowPostgres

/// The engine on PostgreSQL against raw inserts of the same rows through the same client, in one
/// run: `CALL`s of a procedure that inserts a batch of 100-byte rows and commits (what one
/// engine commit costs the server at its least), one row and N rows per commit. Needs a server:
/// `WORKFLOW_BENCH_POSTGRES` (tools/bench starts one, with fsync on); skipped without it.
///
/// - per-commit `strict` (one instance, one action per commit) against 1 row per commit;
/// - request/response `grouped`, N instances each with a client looping `await sendAndWait`,
///   against N rows per commit;
/// - request/response `strict`, 100 instances against 1.
///
/// On one machine, the server shares the two cores with the engine: the ratios say what the
/// engine adds per commit, not what several machines would reach.
enum PostgresScenario {
    static let name = "postgres"
    static let instanceCounts = [1, 10, 100]

    static var url: String? {
        ProcessInfo.processInfo.environment["WORKFLOW_BENCH_POSTGRES"] ?? ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"]
    }

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        guard let url, let server = PostgresConfiguration(url: url) else {
            FileHandle.standardError.write(Data("wf-bench: postgres skipped: set WORKFLOW_BENCH_POSTGRES to a server URL (tools/bench starts one)\n".utf8))
            return []
        }
        let window = max(0.25, 1.0 * scale)
        var results: [Measurement] = []
        var raw: [Int: Measurement] = [:]
        let rawTable = try RawTable(server: server)
        for count in instanceCounts {
            let commits = max(20, Int(Double(min(500, 20_000 / count)) * scale))
            let result = try rawTable.measure(rowsPerCommit: count, commits: commits, runs: runs)
            raw[count] = result
            results.append(result)
        }
        for count in instanceCounts {
            var result = try requestResponse(.grouped, instances: count, server: server, window: window, runs: runs)
            if let ceiling = raw[count] { result = result.relative(to: ceiling) }
            results.append(result)
        }
        // The same with one commit in flight at a time: what overlapping commits bring.
        if let ceiling = raw[100] {
            results.append(try requestResponse(.grouped, instances: 100, server: server, window: window, runs: runs, concurrentCommits: 1)
                .relative(to: ceiling))
        }
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

    static func requestResponse(
        _ mode: DurableConfiguration.Mode, instances count: Int, server: PostgresConfiguration, window: Double, runs: Int,
        concurrentCommits: Int? = nil
    ) throws -> Measurement {
        let modeName = if case .strict = mode { "strict" } else { "grouped" }
        var configuration = server
        if let concurrentCommits { configuration.concurrentCommits = concurrentCommits }
        configuration.schema = "wfbench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let hosts = try (0..<count).map { index in
            try store.start(CodableCounter(), id: "i\(index)", configuration: benchConfiguration(mode))
        }
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

    /// A table of (key, sequence, record) and a procedure that inserts a batch and commits.
    struct RawTable {
        let connection: PostgresConnection
        let schema: String
        let logger = Logger(label: "wf-bench")

        init(server: PostgresConfiguration) throws {
            schema = "wfbench_raw_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configuration: .init(host: server.host, port: server.port, username: server.username, password: server.password,
                                     database: server.database, tls: .disable),
                id: 1, logger: logger
            ).wait()
            for statement in [
                "CREATE SCHEMA \(schema)",
                "CREATE TABLE \(schema).raw_log (k bigint NOT NULL, seq bigint NOT NULL, rec bytea NOT NULL, PRIMARY KEY (k, seq))",
                """
                CREATE PROCEDURE \(schema).raw_insert(p_k bigint[], p_seq bigint[], p_rec bytea[]) LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO \(schema).raw_log (k, seq, rec) SELECT * FROM unnest(p_k, p_seq, p_rec);
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
            let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
            let keys = (0..<rowsPerCommit).map { Int64(rowsPerCommit) << 32 | Int64($0) }, records = Array(repeating: record, count: rowsPerCommit)
            var sequence: Int64 = 0
            return try Measurement.measure(
                PostgresScenario.name, "raw-\(rowsPerCommit)-per-commit", metric: "rows_per_s", runs: runs,
                detail: "raw PostgreSQL: \(commits) CALLs inserting \(rowsPerCommit) rows of \(RawLMDBScenario.recordSize) B and committing"
            ) {
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
    }
}
