import DurableWorkflow
import Foundation
import WorkflowLocks
import WorkflowStorage

/// The console's live views: one thread watches the store's change feed (the position that
/// grows with every commit, by any process: LMDB's last transaction id) for every page open on
/// the console, and tells each when it moved; the pages then read again what they show. The
/// browser never polls: it holds one event stream (`GET /api/events`).
///
/// Where the store has no change feed to read (a backend without one, a store that cannot open
/// its signal tables read-only), the watcher reads the store's statistics once a second instead.
final class ConsoleChanges: Sendable {
    /// What a page is told.
    enum Event: Sendable, Equatable {
        /// The store changed: its position now.
        case changed(UInt64)
        /// Nothing changed for a while (keeps proxies from closing an idle stream).
        case idle
    }

    private struct State {
        var subscribers: [UUID: AsyncStream<Event>.Continuation] = [:]
        var watching = false
    }

    private let store: WorkflowStore
    private let state = Lock(State())
    /// How long the watcher waits for a hint before it reads the position again.
    static let step: Duration = .milliseconds(250)
    /// How often an idle stream gets a keep-alive.
    static let idleEvery: Duration = .seconds(15)

    init(store: WorkflowStore) {
        self.store = store
    }

    /// A stream of the store's changes for one page, from its position now; ends when the page
    /// goes (the stream's consumer stops).
    func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        let start = state.withLock { state -> Bool in
            state.subscribers[id] = continuation
            defer { state.watching = true }
            return !state.watching
        }
        if start {
            let thread = Thread { [self] in watch() }
            thread.name = "wfctl-serve-changes"
            thread.start()
        }
        return stream
    }

    /// The watcher: until no page listens, reads the position after each hint (or step) and
    /// tells every page when it moved.
    private func watch() {
        let feed = try? store.backend.signalStorage().changeFeed()
        var last = position(feed)
        broadcast(.changed(last))
        var quietSince = ContinuousClock.now
        while state.withLock({ state in
            if state.subscribers.isEmpty { state.watching = false }
            return state.watching
        }) {
            if let feed { _ = feed.wait(timeout: Self.step) } else { Thread.sleep(forTimeInterval: 1) }
            let now = position(feed)
            if now != last {
                last = now
                quietSince = .now
                broadcast(.changed(now))
            } else if ContinuousClock.now - quietSince >= Self.idleEvery {
                quietSince = .now
                broadcast(.idle)
            }
        }
    }

    /// The store's position: its change feed's, else a figure of its statistics that moves with
    /// every commit.
    private func position(_ feed: (any ChangeFeed)?) -> UInt64 {
        if let feed { return feed.position }
        guard let statistics = try? store.statistics() else { return 0 }
        return statistics.lastTransactionID ?? UInt64(statistics.logEntries &+ statistics.instances &* 1_000_003)
    }

    private func broadcast(_ event: Event) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(event) }
    }
}
