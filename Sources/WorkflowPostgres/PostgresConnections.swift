#if Postgres
import Dispatch
import Logging
import PostgresNIO
import WorkflowLocks
import WorkflowStorage

/// The store's connections: opened as calls need them, up to the configured number, and kept.
///
/// The storage protocol is synchronous (LMDB's transactions live on one thread), so a call takes
/// a connection, blocks its own thread on the driver's futures (never an event-loop thread), and
/// gives the connection back. A call that finds every connection busy waits for one; a connection
/// that failed is closed and not given back, so the next call opens a fresh one.
final class PostgresConnections: Sendable {
    let configuration: PostgresConfiguration
    private let slots: DispatchSemaphore
    private let state = Lock(State())
    private let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    private let nextID = Lock(0)

    private struct State {
        var idle: [PostgresConnection] = []
        var closed = false
    }

    init(configuration: PostgresConfiguration) {
        self.configuration = configuration
        self.slots = DispatchSemaphore(value: max(1, configuration.maximumConnections))
    }

    deinit {
        close()
    }

    /// The pool was closed (the store was closed in this process): it opens no connection.
    struct Closed: Error {}

    /// Whether ``close()`` was called.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` with a connection of its own. A `PSQLError` that says the connection broke
    /// retires it; the error is rethrown as it is. Throws ``Closed`` once the pool is closed.
    func with<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
        slots.wait()
        defer { slots.signal() }
        let connection = try take()
        do {
            let result = try body(connection)
            give(connection)
            return result
        } catch {
            if connection.isClosed || Self.breaksConnection(error) {
                Self.closeInBackground(connection)
            } else {
                give(connection)
            }
            throw error
        }
    }

    /// Closes every idle connection; from then on, no call gets one (``Closed``). A call in
    /// progress ends as it would have, and its connection is closed when it gives it back.
    func close() {
        let idle = state.withLock { state -> [PostgresConnection] in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { Self.closeInBackground(connection) }
    }

    private func take() throws -> PostgresConnection {
        if isClosed { throw Closed() }
        while let connection = state.withLock({ $0.idle.popLast() }) {
            if !connection.isClosed { return connection }
            Self.closeInBackground(connection)
        }
        return try open()
    }

    /// A new connection of the caller's own, outside the pool (the caller closes it); throws
    /// ``Closed`` once the pool is closed. With several servers, to the first in order that
    /// answers and, for a writable store, is a primary (not in recovery): after a failover, the
    /// promoted standby; throws ``NoPrimary`` when every server that answered is a standby, or
    /// the last server's error when none answered.
    func open() throws -> PostgresConnection {
        if isClosed { throw Closed() }
        let servers = configuration.servers
        guard servers.count > 1 else { return try connect(to: servers[0]) }
        var lastError: (any Error)?
        var standbys: [PostgresServer] = []
        for server in servers {
            let connection: PostgresConnection
            do {
                connection = try connect(to: server)
            } catch {
                lastError = error
                continue
            }
            if configuration.readOnly { return connection }
            do {
                let rows = try connection.query("SELECT pg_is_in_recovery()", logger: configuration.logger).wait()
                var inRecovery = true
                for row in rows { inRecovery = try row.decode(Bool.self) }
                if !inRecovery { return connection }
                standbys.append(server)
            } catch {
                lastError = error
            }
            Self.closeInBackground(connection)
        }
        if !standbys.isEmpty { throw NoPrimary(standbys: standbys) }
        throw lastError ?? NoPrimary(standbys: [])
    }

    /// Every server of the configuration that answered is a standby (in recovery): none takes
    /// writes (a failover is under way, or the primary is down and no standby was promoted).
    struct NoPrimary: Error, CustomStringConvertible {
        let standbys: [PostgresServer]
        var description: String {
            "no server takes writes: \(standbys.map { "\($0.host):\($0.port)" }.joined(separator: ", ")) answered as standbys (in recovery)"
        }
    }

    private func connect(to server: PostgresServer) throws -> PostgresConnection {
        let id = nextID.withLock { id -> Int in
            id += 1
            return id
        }
        var options = PostgresConnection.Configuration(
            host: server.host, port: server.port, username: configuration.username, password: configuration.password,
            database: configuration.database, tls: .disable)
        options.options.additionalStartupParameters = [("application_name", configuration.applicationName)]
        return try PostgresConnection.connect(on: group.next(), configuration: options, id: id, logger: configuration.logger).wait()
    }

    private func give(_ connection: PostgresConnection) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { Self.closeInBackground(connection) }
    }

    /// Starts closing `connection` without waiting for the server's goodbye; the connection is
    /// kept until it is closed (the driver requires it).
    private static func closeInBackground(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Whether `error` leaves the connection unusable (as opposed to a statement the server refused).
    private static func breaksConnection(_ error: any Error) -> Bool {
        if error is ConnectionLost { return true }
        guard let error = error as? PSQLError else { return false }
        return error.code != .server
    }
}
#endif
