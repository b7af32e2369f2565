import DurableWorkflow
import Foundation
import WorkflowLocks

/// Commits and log entries per second over the last ten minutes, for the console's chart: one
/// thread reads the store's statistics once a second while the console runs. Only where they
/// are cheap and count commits: a store that numbers its transactions (LMDB: the last
/// transaction id and its databases' entry counts, read without a scan); elsewhere the chart
/// says it is not available.
final class ConsoleRates: Sendable {
    /// The store's counters at one moment.
    struct Sample: Codable, Sendable, Equatable {
        /// Seconds since 1970.
        let time: Double
        /// Write transactions committed so far (commits, by any process).
        let transactions: UInt64
        /// Log entries in the store.
        let entries: Int
    }

    static let interval: Duration = .seconds(1)
    /// Ten minutes of samples.
    static let kept = 600

    private struct State {
        var samples: [Sample] = []
        var running = false
        /// Why there are none (the store does not number its transactions).
        var unavailable: String?
    }

    private let store: WorkflowStore
    private let state = Lock(State())

    init(store: WorkflowStore) {
        self.store = store
    }

    /// Starts sampling (once; again after ``stop()``).
    func start() {
        let start = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard start else { return }
        let thread = Thread { [self] in
            while state.withLock({ $0.running }) {
                sample()
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.name = "wfctl-serve-rates"
        thread.start()
    }

    func stop() { state.withLock { $0.running = false } }

    /// The samples kept, oldest first, or why there are none.
    var recent: (samples: [Sample], unavailable: String?) { state.withLock { ($0.samples, $0.unavailable) } }

    private func sample() {
        guard let statistics = try? store.statistics() else { return }
        guard let transactions = statistics.lastTransactionID else {
            state.withLock { $0.unavailable = "a \(statistics.backend) store does not number its commits: the chart needs LMDB's" }
            return
        }
        let now = Sample(time: Date().timeIntervalSince1970, transactions: transactions, entries: statistics.logEntries)
        state.withLock { state in
            state.samples.append(now)
            if state.samples.count > Self.kept { state.samples.removeFirst(state.samples.count - Self.kept) }
        }
    }
}
