import Dispatch
import Workflow
import WorkflowLocks
import WorkflowStorage

/// The store's one commit path: every instance's batches wait here, and one committer at a time
/// takes everything waiting, from every instance, into one transaction, commits it once and then
/// settles each instance (its committed sequence, observers, attachments, its host's notice).
///
/// Concurrent hosts therefore share commits and their syncs, as concurrent transactions share a
/// WAL flush in a database server. The committer is whoever finds the pipeline idle: a host that
/// must wait for its commit (strict, processCrashSafe, stop) commits on its own thread, taking
/// along whatever else waits, and returns once its own entries are settled; a host that hands a
/// batch off (group commits) wakes a background committer, which commits round after round
/// until nothing waits. No round waits for more work to arrive: a lone client is committed at
/// once.
///
/// One instance's batches go in the order they were handed in (a writer is taken by one round at
/// a time, and rounds do not overlap). An instance refused in a round (another host owns it) or
/// whose action cannot be encoded fails alone, with nothing of it written. A failed commit fails
/// every instance that had entries in it.
final class CommitPipeline: Sendable {
    private let state = Lock(State())

    /// Whether a committer is at work, and who waits for the next round.
    private struct State {
        var phase = Phase.idle
        /// Writers with batches waiting, each once, in the order they first handed one in.
        var ready: [LogWriter] = []
    }

    /// The pipeline's lifecycle.
    enum Phase {
        /// Nothing is being committed: the next writer to hand in a batch starts a committer.
        case idle
        /// A committer (a host's thread or a background worker) runs rounds until nothing waits.
        case committing
    }

    /// Whether a committer is at work now (a moment later it may not be).
    var isCommitting: Bool { state.withLock { $0.phase == .committing } }

    /// `writer` has batches waiting for a background commit (it was not listed yet): lists it
    /// for the next round, and starts a background committer if none runs.
    func submit(_ writer: LogWriter) {
        let startCommitter = state.withLock { state -> Bool in
            state.ready.append(writer)
            guard state.phase == .idle else { return false }
            state.phase = .committing
            return true
        }
        if startCommitter { DispatchQueue.global().async { self.commitInBackground() } }
    }

    /// Lists `writer` (when `list`: it has batches waiting and was not listed yet), then runs on
    /// the caller's thread until the writer says its entries through the last it handed in are
    /// settled: commits rounds itself while no other committer runs, else waits for the one
    /// that does. Anything still waiting when it is done goes to a background committer.
    func commit(_ writer: LogWriter, list: Bool) {
        var list = list
        while true {
            let lead = state.withLock { state -> Bool in
                if list { state.ready.append(writer) }
                guard state.phase == .idle else { return false }
                state.phase = .committing
                return true
            }
            list = false
            guard lead else {
                if writer.isSettled { return }
                writer.waitForRound()
                continue
            }
            while true {
                commitRound()
                let next = state.withLock { state -> Phase? in
                    if state.ready.isEmpty {
                        state.phase = .idle
                        return .idle
                    }
                    return writer.isSettled ? .committing : nil
                }
                switch next {
                case .idle?: return
                case .committing?:
                    DispatchQueue.global().async { self.commitInBackground() }
                    return
                case nil: continue
                }
            }
        }
    }

    /// The background committer: rounds until nothing waits.
    private func commitInBackground() {
        while true {
            let idle = state.withLock { state -> Bool in
                if state.ready.isEmpty {
                    state.phase = .idle
                    return true
                }
                return false
            }
            if idle { return }
            commitRound()
        }
    }

    /// Takes every writer waiting, writes their batches in one transaction and settles them.
    private func commitRound() {
        let writers = state.withLock { state -> [LogWriter] in
            defer { state.ready = [] }
            return state.ready
        }
        var round = writers.compactMap { $0.takeForCommit() }
        guard let store = round.first?.writer.store else { return }
        let started = ContinuousClock.now
        Self.write(&round, store: store)
        let duration = ContinuousClock.now - started
        for participant in round { participant.writer.settle(participant, duration: duration) }
    }

    /// Commits the round as one request. A participant whose actions cannot be encoded, or whom
    /// the store refuses (another host owns the instance), is marked failed alone, with nothing of
    /// it written; a failed commit marks every participant in it failed.
    private static func write(_ round: inout [CommitParticipant], store: WorkflowStore) {
        // Synced unless every participant only asks for its commits to survive a process crash.
        var syncInterval: Duration?
        for participant in round {
            guard case .processCrashSafe(let interval) = participant.writer.configuration.mode else {
                syncInterval = nil
                break
            }
            syncInterval = min(interval, syncInterval ?? interval)
        }
        var request = CommitRequest(durability: .synced)
        if let syncInterval {
            request.durability = .processCrashSafe
            store.backend.syncPeriodically(every: syncInterval)
        }
        var indices: [Int] = []
        for index in round.indices {
            do {
                guard let changes = try round[index].writer.changes(for: &round[index]) else { continue }
                request.changes.append(changes)
                indices.append(index)
            } catch {
                round[index].failure = error
            }
        }
        guard !request.changes.isEmpty else { return }
        do {
            let outcomes = try store.backend.commit(request)
            for (index, outcome) in zip(indices, outcomes) {
                switch outcome {
                case .committed(let record):
                    round[index].record = record
                case .refused(let current):
                    round[index].failure = round[index].writer.refusal(current: current, at: round[index].lastSequence ?? 0)
                }
            }
        } catch {
            for index in indices {
                round[index].failure = DurableError.storage(error, store: store.path, instance: round[index].writer.instanceID)
            }
        }
    }
}

/// One instance's part in a round of the ``CommitPipeline``: the batches taken from its writer,
/// and what writing them produced.
struct CommitParticipant {
    let writer: LogWriter
    let batches: [CommitBatch]
    let listener: (any JournalListener)?
    /// The index record as committed before this round; after writing, as this round leaves it.
    var record: StoredInstance
    /// The entries written, for observers (only when the instance has some).
    var written: [LogEntry] = []
    /// Why the participant's batches were not written.
    var failure: (any Error)?

    /// The sequence of the last entry in the batches.
    var lastSequence: UInt64? { batches.last(where: { !$0.isEmpty })?.entries.last?.sequence }
}
