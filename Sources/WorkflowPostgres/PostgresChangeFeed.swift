#if Postgres
import Dispatch
import Foundation
import Logging
import PostgresNIO
import Synchronization
import WorkflowLocks
import WorkflowStorage

/// The change hints of a ``PostgresStorage`` in this process: a position that grows with this
/// process's commits and with every notification from another process or host, `NOTIFY` on the
/// store's channel (the schema's name) sent after commits, outside any writing transaction, and
/// one `LISTEN` connection, opened when the first subscriber waits. A lost notification costs at
/// most a poll: a subscriber whose wait times out asks the server whether any transaction
/// committed since it last asked, and the position moves if one did.
final class PostgresChanges: Sendable {
    private let configuration: PostgresConfiguration
    private let connections: PostgresConnections
    /// Tells this process's notifications from other processes'.
    private let processToken = UInt64.random(in: 1...UInt64.max)
    private let counter = Atomic<UInt64>(1)
    private let state = Lock(State())
    private let sender = DispatchQueue(label: "workflow.postgres.notify")

    private struct State {
        var subscribers: [UInt64: WeakSubscriber] = [:]
        var nextSubscriber: UInt64 = 1
        var listener: PostgresConnection?
        /// Subscribers whose announcement waits to be sent (coalesced while one is being sent).
        var pendingAnnouncements: Set<UInt64> = []
        var sending = false
        /// The server's next transaction id when last polled, and when.
        var polledTransaction: UInt64 = 0
        var polledAt: ContinuousClock.Instant?
    }

    private struct WeakSubscriber {
        weak var subscriber: Subscriber?
    }

    /// The least time between two polls of the server by this process's subscribers.
    static let pollSpacing: Duration = .milliseconds(100)

    init(configuration: PostgresConfiguration, connections: PostgresConnections) {
        self.configuration = configuration
        self.connections = connections
    }

    deinit {
        if let listener = state.withLock({ $0.listener }) {
            let closing: EventLoopFuture<Void> = listener.close()
            closing.whenComplete { _ in withExtendedLifetime(listener) {} }
        }
    }

    var position: UInt64 { counter.load(ordering: .acquiring) }

    /// Closes the listening connection (the store was closed; its pool opens no other).
    func close() {
        guard let listener = state.withLock({ state -> PostgresConnection? in
            defer { state.listener = nil }
            return state.listener
        }) else { return }
        let closing: EventLoopFuture<Void> = listener.close()
        closing.whenComplete { _ in withExtendedLifetime(listener) {} }
    }

    /// This process committed something.
    func noteCommit() {
        counter.add(1, ordering: .releasing)
    }

    func subscribe() -> Subscriber {
        let subscriber = state.withLock { state -> Subscriber in
            let subscriber = Subscriber(id: state.nextSubscriber, changes: self)
            state.nextSubscriber += 1
            state.subscribers[subscriber.id] = WeakSubscriber(subscriber: subscriber)
            return subscriber
        }
        return subscriber
    }

    /// Wakes every subscriber of this process except `sender`.
    private func wakeAll(except sender: UInt64?) {
        let live = state.withLock { state -> [Subscriber] in
            state.subscribers = state.subscribers.filter { $0.value.subscriber != nil }
            return state.subscribers.values.compactMap(\.subscriber)
        }
        for subscriber in live where subscriber.id != sender { subscriber.wake() }
    }

    /// Queues a notification from `subscriber`; one is in flight at a time and those queued
    /// meanwhile go together.
    fileprivate func announce(from subscriber: UInt64) {
        let start = state.withLock { state -> Bool in
            state.pendingAnnouncements.insert(subscriber)
            guard !state.sending else { return false }
            state.sending = true
            return true
        }
        if start { sender.async { self.sendAnnouncements() } }
    }

    private func sendAnnouncements() {
        while true {
            let senders = state.withLock { state -> Set<UInt64> in
                defer { state.pendingAnnouncements = [] }
                if state.pendingAnnouncements.isEmpty { state.sending = false }
                return state.pendingAnnouncements
            }
            if senders.isEmpty { return }
            // The payload names the sender when there is one, so that it is not woken by its own hint.
            let payload = "\(processToken):" + (senders.count == 1 ? "\(senders.first!)" : "0")
            do {
                try connections.with { connection in
                    _ = try connection.answer(to: "SELECT pg_notify(\(configuration.schema), \(payload))", logger: configuration.logger)
                }
            } catch {
                // The other subscribers of this process are woken anyway; others poll.
                configuration.logger.warning("could not notify the store's channel: \(loggedError(error))")
            }
            wakeAll(except: senders.count == 1 ? senders.first : nil)
        }
    }

    /// Opens the listening connection if there is none (or it broke).
    fileprivate func ensureListening() {
        let needed = state.withLock { state -> Bool in
            guard let listener = state.listener else { return true }
            return listener.isClosed
        }
        guard needed, let connection = try? connections.open() else { return }
        let token = processToken
        connection.addListener(channel: configuration.schema) { [weak self] _, notification in
            guard let self else { return }
            self.counter.add(1, ordering: .releasing)
            let parts = notification.payload.split(separator: ":")
            let sender = parts.count == 2 && UInt64(parts[0]) == token ? UInt64(parts[1]) : nil
            self.wakeAll(except: sender)
        }
        let previous = state.withLock { state -> PostgresConnection? in
            defer { state.listener = connection }
            return state.listener
        }
        if let previous {
            let closing: EventLoopFuture<Void> = previous.close()
            closing.whenComplete { _ in withExtendedLifetime(previous) {} }
        }
    }

    /// Moves the position if a transaction committed anywhere on the server since the last poll
    /// (at most once per ``pollSpacing`` for the whole process).
    fileprivate func poll() {
        let now = ContinuousClock.now
        let due = state.withLock { state -> Bool in
            if let last = state.polledAt, now - last < Self.pollSpacing { return false }
            state.polledAt = now
            return true
        }
        guard due else { return }
        let next = try? connections.with { connection -> Int64? in
            let rows = try connection.answer(to: "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint", logger: configuration.logger)
            return try rows.first?.decode(Int64.self)
        }
        guard let next = next ?? nil else { return }
        let moved = state.withLock { state -> Bool in
            defer { state.polledTransaction = UInt64(bitPattern: next) }
            return state.polledTransaction != 0 && state.polledTransaction != UInt64(bitPattern: next)
        }
        if moved { counter.add(1, ordering: .releasing) }
    }

    /// One subscriber (a signal dispatcher).
    final class Subscriber: ChangeFeed {
        let id: UInt64
        private let changes: PostgresChanges
        private let semaphore = DispatchSemaphore(value: 0)
        private let woken = Atomic<Bool>(false)

        fileprivate init(id: UInt64, changes: PostgresChanges) {
            self.id = id
            self.changes = changes
        }

        var position: UInt64 { changes.position }

        func wait(timeout: Duration) -> Bool {
            changes.ensureListening()
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            if semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success {
                woken.store(false, ordering: .sequentiallyConsistent)
                return true
            }
            changes.poll()
            return false
        }

        func announce() {
            changes.announce(from: id)
        }

        func wakeSelf() {
            wake()
        }

        fileprivate func wake() {
            if !woken.exchange(true, ordering: .sequentiallyConsistent) { semaphore.signal() }
        }
    }
}
#endif
