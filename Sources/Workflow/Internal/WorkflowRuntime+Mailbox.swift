import WorkflowMemory
import Dispatch
import Synchronization
import WorkflowLocks

/// The mailbox: every change to the tree is an item in one queue, applied by one drainer at a time.
extension WorkflowRuntime {
    // MARK: Queue

    func enqueue(_ item: consuming QueueItem) {
        let me = currentThread()
        if drainerThread.load(ordering: .relaxed) == me, phase.load(ordering: .relaxed) == Phase.rendering.rawValue {
            context.programmerErrors.raise(
                "\(describe(item)) was sent during a render pass of \(context.renderingWorkflow); send from UI callbacks, workers or side effects, never from render")
        }
        // An item sent to an idle host with nothing queued is processed at once, without a trip
        // through the queue (the order is the same: nothing was ahead of it).
        let claim = inbox.withLock { inbox -> DrainClaim in
            if inbox.draining {
                inbox.queue.append(copy item)
                return .queued
            }
            inbox.draining = true
            if inbox.queue.isEmpty { return .direct }
            inbox.queue.append(copy item)
            return .drainer
        }
        switch claim {
        case .queued:
            return
        case .direct:
            drainerThread.store(me, ordering: .relaxed)
            process(item)
            drain(me, alreadyDraining: true)
        case .drainer:
            drain(me, alreadyDraining: false)
        }
    }


    /// Enqueues from a thread that must not become the drainer (a journal's background commit, a
    /// timer): a busy host applies the item in turn; an idle one is drained on another thread.
    ///
    /// The item waits with no drainer claimed until that thread starts: a thread that enqueues
    /// meanwhile (the host's next `send`) becomes the drainer and applies it at once. Claiming the
    /// drainer here would leave every `send` in the thread's wake-up time queued with nobody
    /// applying it, and then hand the host's work to the Dispatch thread.
    func enqueueInBackground(_ item: QueueItem) {
        let idle = inbox.withLock { inbox -> Bool in
            inbox.queue.append(item)
            return !inbox.draining
        }
        if idle { backgroundDrains.async { self.drainIfIdle() } }
    }

    /// Drains what waits in the inbox unless another thread is already draining (or has).
    func drainIfIdle() {
        let becomeDrainer = inbox.withLock { inbox -> Bool in
            if inbox.draining || inbox.queue.isEmpty { return false }
            inbox.draining = true
            return true
        }
        if becomeDrainer { drain(currentThread(), alreadyDraining: false) }
    }

    func drain(_ me: UInt, alreadyDraining: Bool) {
        if !alreadyDraining { drainerThread.store(me, ordering: .relaxed) }
        while true {
            if inbox.withLock({ $0.queue.popFirst(into: popped) }) {
                process(popped.move())
                continue
            }
            // The queue ran empty: a durable host commits what is pending now, or (group commit)
            // a moment later unless someone is waiting for it.
            if openBatch != .empty {
                let waited = !pendingCompletions.isEmpty || !pendingFlushes.isEmpty
                if waited || openBatch == .held {
                    commitPendingAndRelease(waited ? .now : .whenDue)
                    continue
                }
            }
            let done = inbox.withLock { inbox -> Bool in
                guard inbox.queue.isEmpty else { return false }
                drainerThread.store(0, ordering: .relaxed)
                inbox.draining = false
                return true
            }
            if done { return }
        }
    }

    // MARK: JournalListener (any thread)

    // The journal calls these from its committer or a timer: they never make that thread apply
    // the host's actions (a committer does not end up applying them instead of committing, and a
    // host keeps the thread it runs on), nor run the host's callbacks, workers or side effects.

    func journalDidCommit(through sequence: UInt64, onCommitter: Bool) {
        if onCommitter, releaseCommittedAtOnce(through: sequence) { return }
        enqueueInBackground(.committed(sequence))
    }

    /// Releases what the commit through `sequence` held back on the calling thread (a committer's),
    /// when the host is idle (nothing queued, no thread draining, nothing pending) and the release runs
    /// none of the host's callbacks, workers, side effects or its finish: it then only publishes
    /// renderings, delivers outputs to their streams and resumes the awaiting senders. Returns
    /// false, having done nothing, when the host is not idle; a release that would run more is
    /// queued for a background drain, as ``enqueueInBackground(_:)`` does.
    ///
    /// A client awaiting its action is then resumed by the committer that settled it, without
    /// waiting for a thread to drain its host first. (A host's thread that committed for others
    /// leaves their releases to other threads, and goes back to its own host.)
    private func releaseCommittedAtOnce(through sequence: UInt64) -> Bool {
        let claimed = inbox.withLock { inbox -> Bool in
            guard !inbox.draining, inbox.queue.isEmpty else { return false }
            inbox.draining = true
            return true
        }
        guard claimed else { return false }
        drainerThread.store(currentThread(), ordering: .relaxed)
        let plain = releasesPlainly(through: sequence)
        if plain { process(.committed(sequence)) }
        let queued = inbox.withLock { inbox -> Bool in
            if !plain { inbox.queue.append(.committed(sequence)) }
            drainerThread.store(0, ordering: .relaxed)
            inbox.draining = false
            return !inbox.queue.isEmpty
        }
        if queued { backgroundDrains.async { self.drainIfIdle() } }
        return true
    }

    /// Whether releasing the batches committed through `sequence` runs nothing of the host's
    /// (callbacks, workers, side effects, its finish) and leaves nothing for a drain to do.
    private func releasesPlainly(through sequence: UInt64) -> Bool {
        guard callbacks.isEmpty, openBatch == .empty else { return false }
        if case .recorded = finish { return false }
        for index in sealed.indices where sealed[index].through <= sequence {
            if !sealed[index].effects.isEmpty { return false }
        }
        return true
    }

    func journalDidFail(_ error: any Error) {
        failureState.withLock { $0 = $0 ?? error }
        enqueueInBackground(.journalFailed(error))
    }

    func journalWantsCommit() {
        enqueueInBackground(.flush(nil))
    }

    @inline(__always)
    func setPhase(_ newPhase: Phase) {
        phase.store(newPhase.rawValue, ordering: .relaxed)
    }

    func describe(_ item: QueueItem) -> String {
        switch item {
        case .send(_, let action), .sendAndWait(_, let action, _): return "An action (\(type(of: action)))"
        case .work(let work): return "An action (\(work.description))"
        case .updateRoot: return "A props update"
        default: return "A request"
        }
    }
}

// Outside the generic runtime so that the unspecialised runtime needs no metadata lookup for them.

/// Where an idle host's background items are drained: the global queue, looked up once
/// (`DispatchQueue.global()` makes a new wrapper object on every call, and a committer notifies
/// every instance of its round).
let backgroundDrains = DispatchQueue.global()

/// The runtime's queue and whether a thread is draining it.
struct Inbox {
    let queue = ValueBuffer<QueueItem>(capacity: 16)
    var draining = false
}

/// What the drainer is doing, for the "sent during render" check.
enum Phase: UInt8 {
    case idle, applying, rendering, releasing
}

/// What an `enqueue` made of its thread. (Outside the runtime: a type nested in a generic class
/// is generic too, and its metadata would be looked up on every send.)
enum DrainClaim {
    /// Another thread drains: the item waits in the queue for it.
    case queued
    /// This thread drains, and the item (the queue was empty) is processed first.
    case direct
    /// This thread drains the queue, the item last.
    case drainer
}
