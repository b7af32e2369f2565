import Dispatch
import Synchronization
import WorkflowLocks
import WorkflowMemory

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The host's engine: a first-in-first-out queue of work and the single drainer that applies it.
///
/// Whoever enqueues while nobody is draining becomes the drainer: it applies that item (action,
/// cascade, one render pass, effects) and every item that arrived meanwhile, then lets go. So a
/// send on an idle host is applied before `send` returns; a send that arrives while an action is
/// being applied (on the drainer's own thread) or while another thread drains is queued and
/// applied right after, in order: never recursed, never dropped, never concurrent.
///
/// With a journal (a durable host), the consequences of each applied item are held until the
/// journal says its entry is committed, then released in order. A journal that commits in the
/// background takes a batch while the drainer goes on applying: the consequences held for that
/// batch are sealed (`sealed`, oldest first) and released when the journal reports its commit,
/// before anything recorded after it.
// @unchecked Sendable: the drainer-only state (`popped`, the pending and sealed releases, the open
// batch, callbacks, the run and finish state, the tree in `context` and `root`) is read and
// written only by the drainer, one thread at a time: a thread becomes the drainer and stops being
// it under `inbox`'s lock (`draining`), so each drainer sees the writes of the one before.
// Everything else is a constant, a `Lock`, an atomic, or Sendable itself (the publisher, the
// streams, the journal). The `JournalListener` methods, called from a journal's committer or
// timer thread, touch only `failureState` (its lock) and the inbox (`enqueueInBackground`, under
// its lock): drainer-only state is reached through the items they enqueue, by whichever thread
// drains next. The one exception, `journalDidCommit` on a background committer
// (`releaseCommittedAtOnce`), claims the drainer role under the inbox lock as a drain does (only
// when nobody holds it) and gives it back under that lock: it is the drainer meanwhile, by the
// same hand-over.
final class WorkflowRuntime<Root: Workflow & Sendable>: ActionQueue, JournalListener, @unchecked Sendable
where Root.Rendering: Sendable, Root.Output: Sendable {
    let inbox = Lock(Inbox())
    /// Where the drainer moves the item it pops (drainer-only): popping an optional item made a
    /// `nil` to destroy through value witnesses on every send to an idle host.
    let popped = ValueSlot<QueueItem>()
    let drainerThread = Atomic<UInt>(0)
    let phase = Atomic<UInt8>(Phase.idle.rawValue)
    let failureState = Lock<(any Error)?>(nil)

    let publisher = RenderingPublisher<Root.Rendering>()
    let outputs: AsyncStream<Root.Output>
    let outputContinuation: AsyncStream<Root.Output>.Continuation
    let acknowledgeableOutputs: AsyncStream<RootOutput<Root.Output>>
    let acknowledgeableContinuation: AsyncStream<RootOutput<Root.Output>>.Continuation
    /// Whether outputs go to `acknowledgeableOutputs`, each with its entry's sequence.
    let acknowledgedOutputs: Bool
    let journal: (any RuntimeJournal)?
    /// The attempts the host's workers have in flight (a graceful stop drains them).
    let drainGate = DrainGate()

    // Drainer-only state (see above); exclusivity is not checked dynamically on it.
    /// A constant, so that reaching it costs no retain (an optional `var` is retained and
    /// released around uses).
    let context: RuntimeContext
    let root: WorkflowNode<Root>
    let pendingRenderings = ValueBuffer<Root.Rendering>()
    let pendingOutputs = ValueBuffer<Root.Output>()
    /// The entry sequence of each pending output (only with `acknowledgedOutputs`).
    var pendingOutputSequences: [UInt64] = []
    @exclusivity(unchecked) var pendingCompletions: [Waiter<SendError?>] = []
    @exclusivity(unchecked) var pendingFlushes: [Waiter<Done>] = []
    /// What was recorded since the last commit or hand-off (the open batch) and who commits it.
    @exclusivity(unchecked) var openBatch = OpenBatch.empty
    /// Batches being committed in the background, oldest first, with what each holds back; the
    /// oldest `sealedRenderings` pending renderings and `sealedOutputs` outputs belong to them.
    @exclusivity(unchecked) var sealed: [SealedRelease] = []
    @exclusivity(unchecked) var sealedRenderings = 0
    @exclusivity(unchecked) var sealedOutputs = 0
    @exclusivity(unchecked) var callbacks: [UInt64: @Sendable (Any) -> Void] = [:]
    @exclusivity(unchecked) var run = RunState.running
    /// Whether the host stopped (asked to, or by a failure): it applies nothing more.
    var stopped: Bool { run != .running }
    var finish = FinishPhase.open
    var finalOutput: Root.Output?
    /// Whether the root emitted its final output (a ``FinishingWorkflow``): no more actions.
    var finished: Bool {
        if case .open = finish { return false }
        return true
    }
    /// How the instance ended by a control request (terminated, cancelled at once or at its
    /// deadline, deleted), when it did.
    var ending: InstanceEnding?
    /// While the instance is paused (rule O2): actions, props updates and acknowledgements wait
    /// in `held`, in arrival order, for the unpause.
    @exclusivity(unchecked) var holding = false
    @exclusivity(unchecked) var held: [QueueItem] = []
    /// A pause request waiting for the task attempts in flight to report first.
    var pauseUnderWay: ControlCommand?
    /// Ends the instance at its cancel request's deadline.
    var cancelDeadline: Task<Void, Never>?
    let completion = HostCompletion<Root.Output>()
    /// Called once the host has stopped (`nil` after that).
    let stopHandlers = Lock<[@Sendable () -> Void]?>([])

    /// Builds the tree and runs the first render pass on the calling thread. With `replay`, the
    /// logged entries are applied before anything is released.
    init(
        workflow: Root, observers: [any WorkflowObserver], programmerErrors: ProgrammerErrorPolicy,
        clock: any WorkflowClock = SystemClock(), dependencies: [ObjectIdentifier: any Sendable] = [:],
        bufferOutputs: Bool = true, acknowledgedOutputs: Bool = false, journal: (any RuntimeJournal)? = nil,
        restorer: (any StateRestorer)? = nil, versions: InstanceVersions? = nil, initialSequence: UInt64? = nil,
        pathNaming: NodePath.Naming = .readable, replay: ((any ReplayDriver) throws -> Void)? = nil,
        inspect: ((any RuntimeTree) -> Void)? = nil
    ) throws {
        (outputs, outputContinuation) = AsyncStream.makeStream(of: Root.Output.self)
        (acknowledgeableOutputs, acknowledgeableContinuation) = AsyncStream.makeStream(of: RootOutput<Root.Output>.self)
        self.acknowledgedOutputs = acknowledgedOutputs && journal != nil
        self.journal = journal
        let context = RuntimeContext(observers: observers, programmerErrors: programmerErrors, clock: clock)
        context.dependencies = dependencies
        context.restorer = restorer
        // Without versions, asking for a marker traps; a policy that reports gets empty ones to
        // report the undeclared marker through.
        context.versions = versions ?? (programmerErrors.traps ? nil : InstanceVersions(
            codeVersion: nil, declared: [:], markers: [:], programmerErrors: programmerErrors))
        versions?.isReplaying = replay != nil
        context.idempotencyPrefix = journal?.idempotencyPrefix
        context.pathNaming = journal?.pathNaming ?? pathNaming
        context.recordsActions = journal != nil
        if let journal {
            context.admission = { type in journal.admit(type) }
            context.discardReporter = { discard in journal.discarded(discard) }
        }
        context.currentSequence = initialSequence ?? journal?.currentSequence ?? 0
        context.isReplaying = replay != nil
        context.currentTime = clock.now()
        self.context = context
        root = WorkflowNode(workflow: workflow, path: NodePath(segments: [
            .init(workflowType: NodePath.typeName(Root.self), key: "")
        ], naming: context.pathNaming), runtime: context)
        context.attach(queue: self)
        // The first render pass runs here, with this thread as the drainer.
        inbox.withLock { $0.draining = true }
        let me = currentThread()
        drainerThread.store(me, ordering: .relaxed)
        if self.acknowledgedOutputs {
            // Every output is kept with its entry's sequence, in replay too: those the consumer
            // had not acknowledged are delivered again after it.
            let isFinal = Self.finalOutputCheck()
            // Owner: the runtime holds the root, which holds this handler.
            root.outputHandler = { [unowned self] output in
                if let isFinal, !self.finished, isFinal(self.root.workflow, output) { self.reachedFinal(output) }
                let context = self.context
                let sequence = context.isReplaying ? context.replayingSequence : context.currentSequence + 1
                context.lastOutputSequence = sequence
                self.pendingOutputs.append(output)
                self.pendingOutputSequences.append(sequence)
            }
        } else if let isFinal = Self.finalOutputCheck() {
            // Owner: the runtime holds the root, which holds this handler.
            root.outputHandler = { [unowned self] output in
                if !self.finished, isFinal(self.root.workflow, output) { self.reachedFinal(output) }
                if bufferOutputs, !self.context.isReplaying { self.pendingOutputs.append(output) }
            }
        } else if bufferOutputs {
            // Owner: the runtime holds the root, which holds this handler.
            root.outputHandler = { [unowned(unsafe) self] output in
                if !self.context.isReplaying { self.pendingOutputs.append(output) }
            }
        }
        renderPass()
        context.restorer = nil
        if let replay {
            do {
                try replay(Replayer(runtime: self))
            } catch {
                context.isReplaying = false
                fail(error)
                drain(me, alreadyDraining: true)
                throw error
            }
            context.isReplaying = false
            versions?.isReplaying = false
            if self.acknowledgedOutputs { dropAcknowledgedOutputs() }
            if context.control.paused {
                // Paused in its log: the workers about to start run no attempt, and what they
                // emit waits, until the unpause.
                holding = true
                drainGate.pause()
            }
        }
        if let inspect {
            // Inspection only: nothing is released, no worker or side effect ever starts.
            inspect(context)
            stopWithoutReleasing()
            drain(me, alreadyDraining: true)
            return
        }
        releasePending()
        // A worker its journal cannot log failed the host as it was released (rule O4).
        let failedAtStart = stopped
        if !stopped, journal != nil {
            if !finished { scheduleCancelDeadline() }
            journal?.accept(controls: self)
        }
        drain(me, alreadyDraining: true)
        if failedAtStart, let failure { throw failure }
    }

    /// The error that stopped the host (a durable host whose log could not be written).
    var failure: (any Error)? { failureState.withLock { $0 } }
}

/// An id for the calling OS thread.
@inline(__always)
func currentThread() -> UInt {
    #if canImport(Glibc)
    return UInt(pthread_self())
    #else
    return UInt(bitPattern: pthread_self())
    #endif
}
