import Foundation
import PostgresNIO
import Synchronization
import WorkflowPostgres

/// The schemas a run of the postgres scenario creates on the server (the engine's stores, the raw
/// tables), each named once here and dropped when the scenario ends, so that runs against a
/// long-lived server do not leave their rows behind (each run writes hundreds of megabytes).
enum BenchSchemas {
    private static let created = Mutex<[String]>([])

    /// A new schema name, `prefix` then a UUID, to be dropped by ``dropAll(on:)``.
    static func new(_ prefix: String) -> String {
        let name = prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        created.withLock { $0.append(name) }
        return name
    }

    /// Drops every schema named so far (with what it holds); a schema that is gone already is
    /// skipped. Reports a failure on standard error and goes on: the figures are measured by then.
    static func dropAll(on server: PostgresConfiguration) {
        let names = created.withLock { names in
            defer { names.removeAll() }
            return names
        }
        guard !names.isEmpty else { return }
        let logger = Logger(label: "wf-bench")
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configuration: .init(host: server.host, port: server.port, username: server.username, password: server.password,
                                     database: server.database, tls: .disable),
                id: 2, logger: logger
            ).wait()
            defer { try? connection.close().wait() }
            for name in names {
                _ = try connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(name) CASCADE"), logger: logger).wait()
            }
        } catch {
            FileHandle.standardError.write(Data("wf-bench: could not drop the benchmark's schemas (\(names.joined(separator: ", "))): \(String(reflecting: error))\n".utf8))
        }
    }
}
