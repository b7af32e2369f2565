import Synchronization
import Workflow
import WorkflowLocks

/// The timer of a grouped host's held commits: reminds the host (`journalWantsCommit`) once the
/// batch it holds is due, unless that batch was handed off first.
///
/// One task serves batch after batch: when it wakes, it sleeps on until the batch held now is
/// due, and it ends only when nothing is held. A steady stream of batches so costs one wake-up
/// per delay, where a task per batch, cancelled when its batch filled up, would wake two of the
/// cooperative pool's threads per batch.
///
/// The host is let go of outside the lock (the value taken out is dropped after it): its last
/// release runs its deinit.
final class CommitTimer: Sendable {
    private struct State {
        /// When the batch held now is due; `nil` when none is held.
        var due: ContinuousClock.Instant?
        /// The host to remind, held only while a batch is (so that the host is never kept alive
        /// by its journal's timer, and a task still asleep keeps only this timer).
        var listener: (any JournalListener)?
        var task: Task<Void, Never>?
        var stopped = false
    }

    private let state = Lock(State())

    /// The host holds a new batch, due after `delay`.
    func hold(for delay: Duration, listener: any JournalListener) {
        let due = ContinuousClock.now + delay
        state.withLock { state in
            guard !state.stopped else { return }
            state.due = due
            state.listener = listener
            if state.task == nil {
                // The task takes the lock first thing, so it starts only once this returns.
                state.task = Task.detached { await self.run() }
            }
        }
    }

    /// The batch held was handed off (or committed) some other way.
    func release() {
        _ = state.withLock { state -> (any JournalListener)? in
            state.due = nil
            return state.listener.take()
        }
    }

    /// The host stopped: lets go of it and ends the task.
    func stop() {
        let (task, _) = state.withLock { state in
            state.stopped = true
            state.due = nil
            return (state.task.take(), state.listener.take())
        }
        task?.cancel()
    }

    private func run() async {
        while true {
            let due = state.withLock { state -> ContinuousClock.Instant? in
                if state.due == nil { state.task = nil }
                return state.due
            }
            guard let due else { return }
            do { try await Task.sleep(until: due, clock: .continuous) } catch { return }
            // Still held and due (not handed off, nor replaced by a later batch): remind once.
            let listener = state.withLock { state -> (any JournalListener)? in
                guard let held = state.due, held <= .now else { return nil }
                state.due = nil
                return state.listener.take()
            }
            listener?.journalWantsCommit()
        }
    }
}
