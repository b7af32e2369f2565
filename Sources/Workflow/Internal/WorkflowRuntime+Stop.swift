import Synchronization
import WorkflowLocks

/// How a host ends: a finishing root's final output, a stop, a failure.
extension WorkflowRuntime {
    // MARK: Finishing

    /// How a ``FinishingWorkflow`` root tells its final output, or `nil` for other roots.
    static func finalOutputCheck() -> ((Root, Root.Output) -> Bool)? {
        guard let finishing = Root.self as? any FinishingWorkflow.Type else { return nil }
        func check<F: FinishingWorkflow>(_: F.Type) -> (Root, Root.Output) -> Bool {
            { root, output in (root as! F).isFinal(output as! F.Output) }
        }
        return check(finishing)
    }

    /// The root emitted its final output (live or in replay): the action that emitted it is the
    /// instance's last, and its journal entry completes the instance.
    @inline(never)
    func reachedFinal(_ output: Root.Output) {
        finalOutput = output
        finish = context.isReplaying ? .recorded(through: context.currentSequence) : .reached
    }

    /// The final action is committed and its consequences released: the host stops after the
    /// work already queued, and its stop hands the result to `completion` (see
    /// ``settleCompletion(failure:)``).
    func settleFinish() {
        finish = .settled
        enqueue(.stop(nil))
    }

    /// Settles `completion` as the host stops, once its journal has let go of the instance: a
    /// caller that resumes the instance as soon as `completion` returns finds it free. A settled
    /// finish gives its final output (a failure after the final commit does not undo it).
    func settleCompletion(failure: (any Error)?) {
        if case .settled = finish, let finalOutput {
            completion.finish(finalOutput)
        } else {
            completion.stop(failure: failure, ending: ending)
        }
    }

    /// Stops the host after a journal failure: nothing uncommitted leaves the runtime.
    func fail(_ error: any Error) {
        failureState.withLock { $0 = $0 ?? error }
        journal?.hostDidFail(error)
        // The journal lets go of the instance first: a waiter resumed below may resume it at once.
        journal?.hostDidStop()
        stopWithoutReleasing()
    }

    func stopWithoutReleasing() {
        run = .failed
        endControl()
        openBatch = .empty
        // Batches still being committed: their effects never start, but workers and side
        // effects they ended (started by earlier, released batches) are ended below.
        for batch in sealed {
            context.effects.workersToStop.append(contentsOf: batch.effects.workersToStop)
            context.effects.lifetimesToEnd.append(contentsOf: batch.effects.lifetimesToEnd)
            pendingCompletions.append(contentsOf: batch.completions)
            pendingFlushes.append(contentsOf: batch.flushes)
        }
        sealed.removeAll()
        sealedRenderings = 0
        sealedOutputs = 0
        pendingRenderings.removeAll()
        pendingOutputs.removeAll()
        pendingOutputSequences.removeAll()
        context.effects.workersToStart.removeAll()
        context.effects.sideEffectsToStart.removeAll()
        root.tearDown()
        context.effects.release(queue: self, observers: context.observers, hostStopped: true)
        let notApplied = SendError(reason: .hostStopped, underlying: failure)
        for completion in pendingCompletions { completion.resume(returning: notApplied) }
        pendingCompletions.removeAll()
        for flush in pendingFlushes { flush.resume() }
        pendingFlushes.removeAll()
        endStreams()
        settleCompletion(failure: failure)
        runStopHandlers()
        setPhase(.idle)
    }

    /// Calls `handler` once the host has stopped (at once if it has).
    func whenStopped(_ handler: @escaping @Sendable () -> Void) {
        let added = stopHandlers.withLock { handlers -> Bool in
            guard handlers != nil else { return false }
            handlers!.append(handler)
            return true
        }
        if !added { handler() }
    }

    func runStopHandlers() {
        let handlers = stopHandlers.withLock { handlers in
            defer { handlers = nil }
            return handlers ?? []
        }
        for handler in handlers { handler() }
    }

    func endStreams() {
        callbacks.removeAll()
        publisher.finish()
        outputContinuation.finish()
        acknowledgeableContinuation.finish()
    }
}

/// Where a finishing root's final output stands.
enum FinishPhase {
    /// Not emitted.
    case open
    /// Emitted by the action being applied, not yet recorded in the journal.
    case reached
    /// Recorded as the entry at `through` (0 in memory): released with that entry's commit.
    case recorded(through: UInt64)
    /// Delivered to `completion`.
    case settled
}

/// Whether the host runs.
enum RunState {
    case running
    /// Stopped when asked, after committing and releasing what it held.
    case stopped
    /// Stopped without releasing anything uncommitted: a journal failure, or an inspection.
    case failed
}
