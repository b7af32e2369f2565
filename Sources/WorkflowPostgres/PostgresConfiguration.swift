#if Postgres
import Foundation
import Logging

/// Where a ``PostgresStorage`` connects and how: the server, the schema that holds the store,
/// and how many connections it may use.
///
/// A store is one schema of one database: several stores (or test runs) share a server by using
/// different schemas. Every host of a service opens the same configuration.
public struct PostgresConfiguration: Sendable {
    /// The server's host name or address.
    public var host: String
    public var port: Int
    /// Servers to try after `host`:`port`, in order, when it cannot be reached or does not take
    /// writes (a standby): a primary and its standbys, so that after a failover (a standby
    /// promoted) the store's new connections reach the new primary. With any listed, each
    /// connection asks its server whether it is in recovery, and a writable store keeps only a
    /// primary's (a read-only one takes the first that answers).
    public var otherServers: [PostgresServer] = []
    public var username: String
    public var password: String?
    public var database: String
    /// The schema that holds the store's tables, created at the first open: lowercase letters,
    /// digits and underscores, starting with a letter or underscore, at most 63 characters.
    public var schema: String
    /// The most connections the store opens for its calls (they are opened as they are needed,
    /// and kept). Every call holds one connection for its duration, so this bounds the calls in
    /// flight at once. A store whose hosts run (or whose signals are waited for) also keeps one
    /// connection that listens for change notifications (`LISTEN`), besides these.
    public var maximumConnections: Int
    /// How long this process's lease on the store lasts without a renewal (renewed every third of
    /// it). When a process's lease runs out (it crashed, hung or lost the database), the live
    /// processes may take its instances over; a process that could not renew in time stops
    /// committing before that can happen.
    public var leaseTime: Duration = .seconds(10)
    /// Which machine this process runs on: claims of processes on the same machine are judged by
    /// whether the process is alive (at once after a crash), those of other machines by their
    /// lease. Defaults to the host name and the kernel's boot id; containers that share a kernel
    /// must have distinct host names.
    public var machine: String = PostgresConfiguration.thisMachine
    /// Whether the store is opened for inspection only: every write fails with `.readOnly`, and
    /// an open neither creates nor migrates the schema.
    public var readOnly: Bool = false
    /// How many commits of the store's pipeline may be in flight at once (each on a connection of
    /// its own, for different instances): while one waits for the server, the next is sent.
    /// At most `maximumConnections - 1`, so that a connection is left for reads and claims.
    /// Each commit costs the client and the server work of its own, whatever it carries, and
    /// more commits in flight share the clients among more, smaller rounds: a hundred
    /// request/response clients were served faster with two than with three, with less CPU per
    /// action on both sides (docs/PERFORMANCE.md, "PostgreSQL"). Raise it when the server's round
    /// trips, not its work, are what the clients wait for (a server far away, or with cores to
    /// spare).
    public var concurrentCommits: Int = 2
    /// Where postgres-nio logs connection events (nothing below warnings unless you lower it).
    public var logger: Logger

    /// The `application_name` of the store's connections, as the server lists them
    /// (`pg_stat_activity`, its logs): `workflow` and the schema, cut to the server's 63 bytes.
    public var applicationName: String {
        var name = "workflow " + schema
        while name.utf8.count > 63 { name.removeLast() }
        return name
    }

    public init(
        host: String = "127.0.0.1", port: Int = 5432, username: String = "postgres", password: String? = nil, database: String = "postgres",
        schema: String = "workflow", maximumConnections: Int = 4, logger: Logger? = nil
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.schema = schema
        self.maximumConnections = maximumConnections
        self.logger = logger ?? PostgresConfiguration.quietLogger
    }

    /// A configuration from a URL: `postgres://user[:password]@host[:port][,host[:port]...][/database][?schema=name]`
    /// (several servers as libpq takes them: the first is `host`:`port`, the others
    /// ``otherServers``). Returns `nil` when the URL is not of that shape.
    public init?(url: String, schema: String? = nil) {
        guard let rest = url.split(separator: "://", maxSplits: 1).dropFirst().first,
              url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else { return nil }
        var path = Substring(rest)
        var query: Substring = ""
        if let mark = path.firstIndex(of: "?") {
            query = path[path.index(after: mark)...]
            path = path[..<mark]
        }
        var database: Substring = "postgres"
        if let slash = path.firstIndex(of: "/") {
            database = path[path.index(after: slash)...]
            path = path[..<slash]
        }
        var credentials: Substring = "postgres"
        if let at = path.lastIndex(of: "@") {
            credentials = path[..<at]
            path = path[path.index(after: at)...]
        }
        let user = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = user.first, !name.isEmpty else { return nil }
        var servers: [PostgresServer] = []
        for server in path.split(separator: ",", omittingEmptySubsequences: false) {
            let hostPort = server.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let host = hostPort.first, !host.isEmpty else { return nil }
            var port = 5432
            if hostPort.count == 2 {
                guard let given = Int(hostPort[1]) else { return nil }
                port = given
            }
            servers.append(PostgresServer(host: String(host), port: port))
        }
        guard let first = servers.first else { return nil }
        var schemaName = schema ?? "workflow"
        for pair in query.split(separator: "&") where pair.hasPrefix("schema=") {
            schemaName = String(pair.dropFirst("schema=".count))
        }
        self.init(
            host: first.host, port: first.port, username: String(name), password: user.count == 2 ? String(user[1]) : nil,
            database: database.isEmpty ? "postgres" : String(database), schema: schemaName)
        self.otherServers = Array(servers.dropFirst())
    }

    /// Every server to try, in order: `host`:`port`, then ``otherServers``.
    public var servers: [PostgresServer] { [PostgresServer(host: host, port: port)] + otherServers }

    /// Whether `schema` is a name the store accepts (it is written into SQL as an identifier).
    static func isValidSchema(_ schema: String) -> Bool {
        guard let first = schema.utf8.first, schema.utf8.count <= 63, first == UInt8(ascii: "_") || (first >= 0x61 && first <= 0x7A) else {
            return false
        }
        return schema.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// The host name and boot id of the machine this process runs on.
    static let thisMachine: String = {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        let boot = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return boot.isEmpty ? host : "\(host)/\(boot)"
    }()

    /// The servers, for messages: `host:port` (`host:port,host:port` with others).
    var serverList: String { servers.map { "\($0.host):\($0.port)" }.joined(separator: ",") }

    /// Where the store is, for messages: `host:port/database?schema=name` (no credentials).
    var location: String { "\(serverList)/\(database)?schema=\(schema)" }

    private static let quietLogger: Logger = {
        var logger = Logger(label: "workflow.postgres")
        logger.logLevel = .warning
        return logger
    }()
}

/// A PostgreSQL server: its host name or address and port.
public struct PostgresServer: Sendable, Hashable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int = 5432) {
        self.host = host
        self.port = port
    }
}
#endif
