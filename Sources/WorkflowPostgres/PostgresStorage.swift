#if Postgres
import Foundation
import Logging
import PostgresNIO
import WorkflowLocks
import WorkflowStorage

/// A store in a PostgreSQL database: one schema holds the instances, their logs, snapshots and
/// signals, and several hosts (processes on several machines) can share it.
///
/// Open it with ``open(_:)``, then use it as any backend: `WorkflowStore(backend: storage)`.
/// Every write is one round trip that returns once its transaction committed; reads see what
/// any host committed before they began. `CommitDurability.synced` commits with
/// `synchronous_commit = on` (the server's WAL is flushed, and replicated if the server is so
/// configured); `processCrashSafe` commits with it off: the engine's crash loses nothing, a crash
/// of the database server's machine can lose the last moments of commits.
///
/// Available when the package's `Postgres` trait is on.
public final class PostgresStorage: StorageBackend {
    public let name = "PostgreSQL"
    public let location: String
    public var isDurable: Bool { true }
    public var isReadOnly: Bool { configuration.readOnly }
    public var concurrentCommits: Int { max(1, min(configuration.concurrentCommits, configuration.maximumConnections - 1)) }
    /// Every connection but one, which is left for the commits of the instances already resumed.
    public var concurrentCalls: Int { max(concurrentCommits, configuration.maximumConnections - 1) }

    let configuration: PostgresConfiguration
    let connections: PostgresConnections
    /// Change hints for signal dispatchers: this process's commits and other hosts' notifications.
    let changes: PostgresChanges
    /// The schema, to write into SQL (checked to be a plain identifier).
    let schema: String
    /// This process's host registration (none when opened read-only).
    private let hostLease = Lock<PostgresHostLease?>(nil)
    /// Claims of this process's stopped hosts that could not be cleared (the server was out of
    /// reach): tried again before each listing of instances to take over, so that they do not
    /// stay held by this live host with nobody running them.
    let unreleased = Lock<[String: InstanceClaim]>([:])
    /// The code versions this host last told the other hosts it runs (`nil`: none told yet, which
    /// the hosts' table reads as every version).
    let publishedCodeVersions = Lock<SupportedCodeVersions?>(nil)

    private init(configuration: PostgresConfiguration) {
        self.configuration = configuration
        self.location = configuration.location
        self.schema = configuration.schema
        self.connections = PostgresConnections(configuration: configuration)
        self.changes = PostgresChanges(configuration: configuration, connections: connections)
    }

    /// Connects, creates the store's schema and tables if they are missing, and applies the
    /// migrations the store lacks. Fails with `.newerFormat` for a store written by a newer
    /// library, `.invalidInput` for a bad schema name, `.notFound` when the server cannot be reached.
    public static func open(_ configuration: PostgresConfiguration) throws(StorageFailure) -> PostgresStorage {
        let storage = PostgresStorage(configuration: configuration)
        guard PostgresConfiguration.isValidSchema(configuration.schema) else {
            throw storage.failure(.invalidInput, "open", "'\(configuration.schema)' is not a schema name the store accepts",
                                  recovery: "Use lowercase letters, digits and underscores, starting with a letter or underscore")
        }
        if configuration.readOnly {
            try storage.checkFormat()
        } else {
            try storage.migrate()
            do {
                let lease = try PostgresHostLease(configuration: configuration, connections: storage.connections)
                storage.hostLease.withLock { $0 = lease }
            } catch {
                throw storage.storageFailure(error, operation: "open")
            }
        }
        return storage
    }

    /// Leaves the store: ends this process's lease (live hosts may take over at once what it
    /// still holds) and closes its connections, the listening one too; calls after this fail
    /// with ``StorageFailure/Kind/closed``. Releasing the store closes the connections too, and
    /// its lease then runs out by itself.
    public func close() {
        hostLease.withLock { $0 }?.leave()
        connections.close()
        changes.close()
    }

    /// This process's host registration, when opened writable.
    var lease: PostgresHostLease? { hostLease.withLock { $0 } }

    /// This process's host id in claims (0 when read-only).
    var hostID: Int64 { lease?.id ?? 0 }

    /// Fails when this process's lease has run out: it may no longer commit or claim.
    func requireLease(_ operation: String) throws(StorageFailure) {
        if connections.isClosed { throw storageFailure(PostgresConnections.Closed(), operation: operation) }
        guard let lease, !lease.isHeld else { return }
        throw failure(
            .unavailable, operation,
            "this process's lease on the store ran out (it could not renew it within \(configuration.leaseTime)); its instances may be taken over",
            recovery: "Check the connection to the database; resume the instances once it is back (resume checks ownership again)")
    }

    // MARK: Migrations

    private func migrate() throws(StorageFailure) {
        try run("open") { connection in
            try self.execute("BEGIN", on: connection)
            do {
                try self.execute("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))", on: connection)
                for statement in PostgresSchema.bootstrap { try self.execute(PostgresSchema.sql(statement, schema: self.schema), on: connection) }
                let current = try self.format(on: connection) ?? 0
                guard current <= PostgresSchema.format else {
                    throw self.failure(
                        .newerFormat, "open", "the store's format is \(current); this library writes format \(PostgresSchema.format)",
                        recovery: "Open the store with a newer version of the library")
                }
                for statement in PostgresSchema.migration(from: Int(current)) {
                    try self.execute(PostgresSchema.sql(statement, schema: self.schema), on: connection)
                }
                try self.execute(
                    "INSERT INTO \(self.schema).wf_meta (name, value) VALUES ('format', \(PostgresSchema.format)) "
                        + "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", on: connection)
                try self.execute("COMMIT", on: connection)
            } catch {
                _ = try? connection.answer(to: "ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }

    /// The store's format (`wf_meta.format`), read on `connection`; `nil` when it has none.
    func format(on connection: PostgresConnection) throws -> Int64? {
        try rows("SELECT value FROM \(unescaped: schema).wf_meta WHERE name = 'format'", on: connection).first?.decode(Int64.self)
    }

    /// For a read-only open: the store must exist and be of this library's format.
    private func checkFormat() throws(StorageFailure) {
        let current = try run("open") { connection -> Int64? in
            let exists = try self.rows("SELECT to_regclass(\(self.schema + ".wf_meta")) IS NOT NULL", on: connection)
            guard try exists.first?.decode(Bool.self) == true else { return nil }
            return try self.format(on: connection) ?? 0
        }
        guard let current else {
            throw failure(.notFound, "open", "the schema \(schema) holds no workflow store", recovery: "Check the schema name")
        }
        if current > PostgresSchema.format {
            throw failure(.newerFormat, "open", "the store's format is \(current); this library reads format \(PostgresSchema.format)",
                          recovery: "Open the store with a newer version of the library")
        }
        if current < PostgresSchema.format {
            throw failure(.incompatible, "open", "the store's format is \(current), older than this library's \(PostgresSchema.format)",
                          recovery: "Open it once without readOnly to migrate it")
        }
    }

    // MARK: Running statements

    var logger: Logger { configuration.logger }

    /// Runs `body`, which only reads (or may run twice), with a connection; when the connection
    /// turns out broken (the server closed it: restarted, or terminated the backend), once more on
    /// a new one. Any error becomes a ``StorageFailure`` of `operation`.
    func run<Result>(_ operation: String, _ body: (PostgresConnection) throws -> Result) throws(StorageFailure) -> Result {
        do {
            return try connections.with(body)
        } catch let error as PSQLError where error.code != .server {
            return try runOnce(operation, body)
        } catch is ConnectionLost {
            return try runOnce(operation, body)
        } catch let failure as StorageFailure {
            throw failure
        } catch {
            throw storageFailure(error, operation: operation)
        }
    }

    /// Runs `body` with a connection, once: a write whose outcome a broken connection leaves
    /// unknown is not sent again. Any error becomes a ``StorageFailure`` of `operation`.
    func runOnce<Result>(_ operation: String, _ body: (PostgresConnection) throws -> Result) throws(StorageFailure) -> Result {
        do {
            return try connections.with(body)
        } catch let failure as StorageFailure {
            throw failure
        } catch {
            throw storageFailure(error, operation: operation)
        }
    }

    /// Runs `body`, which commits a write (a procedure call), once, and moves the change position.
    func write<Result>(_ operation: String, _ body: (PostgresConnection) throws -> Result) throws(StorageFailure) -> Result {
        try refuseIfReadOnly(operation)
        let result = try runOnce(operation, body)
        changes.noteCommit()
        return result
    }

    /// Runs `body` in an explicit transaction, committed when it returns and rolled back when it
    /// throws. The driver's errors become ``StorageFailure``s of `operation`; others (a signal
    /// handler's) are rethrown as they are.
    func transaction<Result>(_ operation: String, _ body: (PostgresConnection) throws -> Result) throws -> Result {
        try refuseIfReadOnly(operation)
        do {
            return try connections.with { connection -> Result in
                try execute("BEGIN", on: connection)
                do {
                    let result = try body(connection)
                    try execute("COMMIT", on: connection)
                    return result
                } catch {
                    _ = try? connection.answer(to: "ROLLBACK", logger: logger)
                    throw error
                }
            }
        } catch let error as PSQLError {
            throw storageFailure(error, operation: operation)
        } catch let error as PostgresDecodingError {
            throw storageFailure(error, operation: operation)
        } catch let error as ConnectionLost {
            throw storageFailure(error, operation: operation)
        } catch let error as PostgresConnections.Closed {
            throw storageFailure(error, operation: operation)
        }
    }

    private func refuseIfReadOnly(_ operation: String) throws(StorageFailure) {
        guard !configuration.readOnly else {
            throw failure(.readOnly, operation, "the store was opened read-only", recovery: "Open it without readOnly to write")
        }
    }

    /// Runs `sql` (no parameters) and reads its result to the end.
    func execute(_ sql: String, on connection: PostgresConnection) throws {
        _ = try connection.answer(to: PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    /// Runs `query` and returns every row (read to the end before this returns).
    func rows(_ query: PostgresQuery, on connection: PostgresConnection) throws -> [PostgresRow] {
        try connection.answer(to: query, logger: logger)
    }

    /// A ``StorageFailure`` of this store.
    func failure(_ kind: StorageFailure.Kind, _ operation: String, _ detail: String, recovery: String = "",
                 underlying: (any Error & Sendable)? = nil) -> StorageFailure {
        StorageFailure(kind: kind, backend: name, location: location, operation: operation, detail: detail, recovery: recovery,
                       underlying: underlying)
    }
}
#endif
