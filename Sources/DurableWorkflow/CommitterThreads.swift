import Dispatch
import Foundation
import WorkflowLocks

/// Threads of their own for a pipeline's background committers where a commit blocks its thread
/// for a round trip (see ``CommitPipeline/committerThreads``): a committer's thread that has
/// no more rounds to commit parks for ``idleLimit``, and the next committer to start runs on it
/// instead of on a new thread. A lone client's commits would otherwise each pay for a thread's
/// creation; a burst needs no more threads than committers run at once, and they end once the
/// store is idle (a parked thread keeps its pipeline until then).
final class CommitterThreads: Sendable {
    /// A parked thread: the job it is handed, then its wake-up.
    private final class Parked: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let job = Lock<(@Sendable () -> Void)?>(nil)
    }

    /// How long a thread waits for another committer before it ends.
    let idleLimit: Duration
    /// Parked threads, the most recently parked last.
    private let parked = Lock<[Parked]>([])
    /// Threads started and ended so far (tests read them).
    private let started = Lock(0), ended = Lock(0)

    init(idleLimit: Duration = .seconds(1)) {
        self.idleLimit = idleLimit
    }

    /// How many threads were started so far.
    var threadsStarted: Int { started.withLock { $0 } }

    /// How many threads are parked now.
    var parkedThreads: Int { parked.withLock { $0.count } }

    /// How many threads ended so far.
    var threadsEnded: Int { ended.withLock { $0 } }

    /// Runs `job` on a parked thread, or on a new one when none is parked.
    func run(_ job: @escaping @Sendable () -> Void) {
        if let thread = parked.withLock({ $0.popLast() }) {
            thread.job.withLock { $0 = job }
            thread.wake.signal()
            return
        }
        started.withLock { $0 += 1 }
        Thread.detachNewThread { self.serve(job) }
    }

    /// A thread's life: `first`, then each job it is handed while parked, until it waits
    /// ``idleLimit`` for one in vain.
    private func serve(_ first: @escaping @Sendable () -> Void) {
        var next: (@Sendable () -> Void)? = first
        while let job = next {
            next = nil
            job()
            next = park()
        }
        ended.withLock { $0 += 1 }
    }

    /// Parks this thread until a job is handed to it (returned), or `nil` once ``idleLimit``
    /// passed with none. A thread taken off the list by ``run(_:)`` as it gave up waits for the
    /// job it was handed.
    private func park() -> (@Sendable () -> Void)? {
        let slot = Parked()
        parked.withLock { $0.append(slot) }
        let (seconds, attoseconds) = idleLimit.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        if slot.wake.wait(timeout: deadline) == .timedOut {
            let gaveUp = parked.withLock { list -> Bool in
                guard let index = list.firstIndex(where: { $0 === slot }) else { return false }
                list.remove(at: index)
                return true
            }
            if gaveUp { return nil }
            slot.wake.wait()
        }
        return slot.job.withLock { job in
            defer { job = nil }
            return job
        }
    }
}
