import Synchronization
import WorkflowLocks

/// The release of held consequences once the journal committed the entries that caused them.
extension WorkflowRuntime {
    func commitPendingAndRelease(_ urgency: CommitUrgency) {
        guard let journal else { return }
        do {
            // The journal holds the runtime strongly (as its listener) only while a deferred or
            // background commit is under way: a weak reference would give the runtime a side
            // table, and every retain of it (each sink copied into a rendering) would take the
            // slow path.
            let progress = try journal.commitPending(urgency, listener: self)
            // Held after being asked: the journal will ask for the commit itself (group commit).
            if case .held = progress { openBatch = .deferred }
            follow(progress)
        } catch {
            fail(error)
        }
    }

    /// Releases, holds or seals what is pending, as the journal's answer says.
    func follow(_ progress: CommitProgress) {
        switch progress {
        case .committed:
            openBatch = .empty
            while !sealed.isEmpty {
                var batch = takeOldestSealed()
                releaseSealed(&batch)
            }
            releasePending()
        case .held:
            if openBatch == .empty { openBatch = .held }
        case .committing:
            // The waiters move into the sealed batch, whose array comes back for the next ones
            // once it is released (``releaseSealed(_:)``).
            var completions: [Waiter<SendError?>] = []
            swap(&completions, &pendingCompletions)
            sealed.append(SealedRelease(
                through: context.currentSequence, renderings: pendingRenderings.count - sealedRenderings,
                outputs: pendingOutputs.count - sealedOutputs, effects: context.effects,
                completions: completions, flushes: pendingFlushes))
            sealedRenderings = pendingRenderings.count
            sealedOutputs = pendingOutputs.count
            context.effects = EffectBatch()
            pendingFlushes.removeAll()
            openBatch = .empty
        }
    }

    /// The oldest sealed batch, taken out of `sealed` (usually the only one, taken from the end
    /// without moving the rest).
    func takeOldestSealed() -> SealedRelease {
        sealed.count == 1 ? sealed.removeLast() : sealed.removeFirst()
    }

    /// Releases what a batch committed in the background held back, in the order it was held.
    /// The batch is released where it lies (a `consuming` one was copied, retaining each of its
    /// arrays, and released twice).
    func releaseSealed(_ batch: inout SealedRelease) {
        setPhase(.releasing)
        // Copied only when there is something to release: a copy retains each of its arrays.
        if !batch.effects.isEmpty {
            if !batch.effects.workersToStart.isEmpty, let refusal = unloggableWorker(in: batch.effects) {
                // What the batch committed stands, and its waiters learn so; no worker starts, and
                // what it ends is ended with the tree.
                for completion in batch.completions { completion.resume(returning: nil) }
                for flush in batch.flushes { flush.resume() }
                batch.completions = []
                batch.flushes = []
                context.effects.workersToStop.append(contentsOf: batch.effects.workersToStop)
                context.effects.lifetimesToEnd.append(contentsOf: batch.effects.lifetimesToEnd)
                fail(refusal)
                return
            }
            var effects = batch.effects
            effects.release(queue: self, observers: context.observers)
        }
        if callbacks.isEmpty {
            // Closures rather than the methods themselves: a method reference is a context
            // allocated for each call.
            pendingRenderings.drain(prefix: batch.renderings, movingRun: { publisher.publish(movingAll: $0, count: $1) })
        } else {
            pendingRenderings.drain(prefix: batch.renderings, movingEach: { publish(movingFrom: $0) })
        }
        sealedRenderings -= batch.renderings
        if batch.outputs > 0 { deliverOutputs(prefix: batch.outputs) }
        for completion in batch.completions { completion.resume(returning: nil) }
        // The array goes back for the next waiters when none came meanwhile: each awaited action
        // would otherwise allocate one on the host's thread and free it on the committer's.
        if pendingCompletions.isEmpty, pendingCompletions.capacity == 0, batch.completions.capacity <= Self.recycledCompletions {
            batch.completions.removeAll(keepingCapacity: true)
            swap(&pendingCompletions, &batch.completions)
        }
        for flush in batch.flushes { flush.resume() }
        if case .recorded(let through) = finish, through <= batch.through { settleFinish() }
        setPhase(.idle)
    }

    /// Why a durable host must not start the workers `effects` starts: the first one whose
    /// outputs become actions its journal cannot log (rule O4: it would run, and every output
    /// would be discarded, leaving the workflow waiting forever). `nil` in memory, and when every
    /// worker's actions are admitted (a cached type check each).
    func unloggableWorker(in effects: EffectBatch) -> (any Error)? {
        guard let journal else { return nil }
        for worker in effects.workersToStart where !worker.hasEnded && !worker.isLoggable(in: context) {
            return journal.unloggableWorker(
                worker.actionType, workerType: worker.workerTypeName, key: worker.key, node: worker.node.path, refusal: context.lastRefusal)
        }
        return nil
    }

    /// The most waiters an array handed back by ``releaseSealed(_:)`` has room for.
    static var recycledCompletions: Int { 16 }

    /// Publishes pending renderings (each, in order), delivers outputs, stops and starts workers
    /// and side effects, and resumes waiters.
    func releasePending() {
        if stopped { return }
        if !context.effects.workersToStart.isEmpty, let refusal = unloggableWorker(in: context.effects) {
            // What was committed stands, and its waiters learn so; no worker starts.
            for completion in pendingCompletions { completion.resume(returning: nil) }
            pendingCompletions.removeAll()
            fail(refusal)
            return
        }
        setPhase(.releasing)
        context.effects.release(queue: self, observers: context.observers)
        pendingRenderings.drain(movingEach: { publish(movingFrom: $0) })
        if !pendingOutputs.isEmpty { deliverOutputs() }
        if !pendingCompletions.isEmpty {
            for completion in pendingCompletions { completion.resume(returning: nil) }
            pendingCompletions.removeAll()
        }
        if !pendingFlushes.isEmpty {
            for flush in pendingFlushes { flush.resume() }
            pendingFlushes.removeAll()
        }
        if case .recorded = finish { settleFinish() }
        setPhase(.idle)
    }

    /// Makes the rendering at `pending` the host's current one (it moves into the publisher,
    /// leaving `pending` uninitialised), for its streams, then its callbacks.
    func publish(movingFrom pending: UnsafeMutablePointer<Root.Rendering>) {
        if callbacks.isEmpty {
            publisher.publish(movingFrom: pending)
        } else {
            let rendering = pending.pointee
            publisher.publish(movingFrom: pending)
            for callback in callbacks.values { callback(rendering) }
        }
    }

    /// Out of line so that the output stream's metadata is looked up only when there are outputs.
    @inline(never)
    func deliverOutputs() {
        if acknowledgedOutputs { return deliverAcknowledgeable(count: pendingOutputs.count) }
        pendingOutputs.drain { outputContinuation.yield($0) }
    }

    @inline(never)
    func deliverOutputs(prefix: Int) {
        if acknowledgedOutputs {
            deliverAcknowledgeable(count: prefix)
        } else {
            pendingOutputs.drain(prefix: prefix) { outputContinuation.yield($0) }
        }
        sealedOutputs -= prefix
    }

    /// Delivers the oldest `count` pending outputs with their sequences.
    func deliverAcknowledgeable(count: Int) {
        var index = 0
        pendingOutputs.drain(prefix: count) { output in
            acknowledgeableContinuation.yield(RootOutput(sequence: pendingOutputSequences[index], value: output))
            index += 1
        }
        pendingOutputSequences.removeFirst(count)
    }
}

/// What a batch handed to the journal's background commit holds back until it is committed.
struct SealedRelease {
    /// The batch's last sequence.
    let through: UInt64
    /// How many of the oldest pending renderings and outputs are the batch's.
    let renderings: Int
    let outputs: Int
    var effects: EffectBatch
    var completions: [Waiter<SendError?>]
    var flushes: [Waiter<Done>]
}

/// What the open batch of a durable host holds, and who asks for its commit.
enum OpenBatch {
    /// Nothing recorded since the last commit or hand-off.
    case empty
    /// Entries the runtime commits when its queue runs empty (or at once when someone waits).
    case held
    /// Entries the journal holds for a group commit and will ask for (`journalWantsCommit`),
    /// unless someone waits for them first.
    case deferred
}
