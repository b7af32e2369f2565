#if Postgres
import Dispatch
import DurableWorkflow
import Foundation
import PostgresNIO
import WorkflowLocks
import WorkflowStorage

/// This process's registration as a host of the store: a row in `wf_host` with a lease on the
/// database's clock, renewed every third of ``PostgresConfiguration/leaseTime`` from a timer.
///
/// The lease is held, as far as this process knows, until the lease time after the last renewal
/// that succeeded was *sent*: the server's lease ends no earlier than that. Past that moment the
/// host stops committing (``isHeld`` is false), so that by the time other hosts may take its
/// instances over (when the server's lease has ended), it writes nothing more; its own commits
/// are also refused by their claims once an instance is taken over.
final class PostgresHostLease: Sendable {
    /// The host's id in `wf_host` and in its instances' claims.
    let id: Int64
    private let configuration: PostgresConfiguration
    private let connections: PostgresConnections
    private let state = Lock(State(deadline: .now))
    /// Signalled to end the renewal thread.
    private let stopRenewing = DispatchSemaphore(value: 0)

    private struct State {
        /// Until when this process may commit.
        var deadline: ContinuousClock.Instant
        var left = false
        /// Whether the host's row says it takes over instances of hosts that are gone.
        var takesOver = false
    }

    /// Registers the host (a failure is the open's failure) and starts renewing its lease.
    init(configuration: PostgresConfiguration, connections: PostgresConnections) throws {
        self.id = Int64.random(in: 1...Int64.max)
        self.configuration = configuration
        self.connections = connections
        try renew()
        let interval = configuration.leaseTime / 3
        let nanoseconds = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        // The thread holds the lease weakly: a store that is released stops renewing.
        let stop = stopRenewing
        Thread.detachNewThread { [weak self] in
            while stop.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
                guard let lease = self else { return }
                do {
                    try lease.renew()
                } catch {
                    // The driver's plain description hides the server's message; its debug description has it.
                    lease.configuration.logger.warning("could not renew the host lease on \(lease.configuration.location): \(loggedError(error))")
                }
            }
        }
    }

    deinit {
        stopRenewing.signal()
    }

    /// Whether this process may still commit: its lease has not run out as far as it knows.
    var isHeld: Bool {
        state.withLock { !$0.left && ContinuousClock.now < $0.deadline }
    }

    /// Extends the lease by the lease time from now (on the server's clock).
    func renew() throws {
        let sent = ContinuousClock.now
        let milliseconds = Int64(configuration.leaseTime.components.seconds) * 1_000
            + Int64(configuration.leaseTime.components.attoseconds / 1_000_000_000_000_000)
        let label = "\(ProcessInfo.processInfo.hostName) pid \(getpid())"
        let started = Int64(Date().timeIntervalSince1970 * 1e9)
        let process = ProcessIdentity.current
        try connections.with { connection in
            _ = try connection.answer(
                to: """
                CALL \(unescaped: configuration.schema).wf_host_renew(\(id), \(configuration.machine), \(label), \(started), \(milliseconds), \
                \(process.pid), \(Int64(bitPattern: process.startTime)), NULL)
                """, logger: configuration.logger)
        }
        state.withLock { state in
            if !state.left { state.deadline = max(state.deadline, sent + configuration.leaseTime) }
        }
    }

    /// Marks the host as one that takes over instances of hosts that are gone (once).
    func markTakesOver() throws {
        guard !state.withLock({ $0.takesOver }) else { return }
        try connections.with { connection in
            _ = try connection.answer(to: "CALL \(unescaped: configuration.schema).wf_host_takes_over(\(id), NULL)", logger: configuration.logger)
        }
        state.withLock { $0.takesOver = true }
    }

    /// Ends the lease: the row goes, so that live hosts may take over at once what this host
    /// still held; no commit is allowed afterwards.
    func leave() {
        stopRenewing.signal()
        state.withLock { $0.left = true }
        try? connections.with { connection in
            _ = try connection.answer(to: "CALL \(unescaped: configuration.schema).wf_host_leave(\(id), NULL)", logger: configuration.logger)
        }
    }
}
#endif
