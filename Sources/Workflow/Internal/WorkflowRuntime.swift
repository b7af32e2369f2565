import Dispatch
import Synchronization
import WorkflowLocks

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
final class WorkflowRuntime<Root: Workflow & Sendable>: ActionQueue, JournalListener, @unchecked Sendable
where Root.Rendering: Sendable, Root.Output: Sendable {
    // @unchecked Sendable: the stored properties marked "drainer-only" are touched only by the
    // current drainer. The `inbox` mutex hands the drainer role to one thread at a time
    // (`draining`), and its lock/unlock orders each drainer's writes before the next one's reads.
    // `failure` has its own lock; the rest is immutable or thread-safe. The `JournalListener`
    // methods, called from a journal's writer or timer thread, touch only `failureState` (its lock)
    // and the inbox (`enqueueInBackground`, under the inbox lock): drainer-only state is reached
    // through the items they enqueue, by whichever thread drains next.

    private let inbox = Lock(Inbox())
    /// Where the drainer moves the item it pops (drainer-only): popping an optional item made a
    /// `nil` to destroy through value witnesses on every send to an idle host.
    private let popped = UnsafeMutablePointer<QueueItem>.allocate(capacity: 1)
    private let drainerThread = Atomic<UInt>(0)
    private let phase = Atomic<UInt8>(Phase.idle.rawValue)
    private let failureState = Lock<(any Error)?>(nil)

    let publisher = RenderingPublisher<Root.Rendering>()
    let outputs: AsyncStream<Root.Output>
    private let outputContinuation: AsyncStream<Root.Output>.Continuation
    let acknowledgeableOutputs: AsyncStream<RootOutput<Root.Output>>
    private let acknowledgeableContinuation: AsyncStream<RootOutput<Root.Output>>.Continuation
    /// Whether outputs go to `acknowledgeableOutputs`, each with its entry's sequence.
    private let acknowledgedOutputs: Bool
    private let journal: (any RuntimeJournal)?

    // Drainer-only state (see above); exclusivity is not checked dynamically on it.
    /// A constant, so that reaching it costs no retain (an optional `var` was retained and
    /// released around uses).
    private let context: RuntimeContext
    private let root: WorkflowNode<Root>
    private let pendingRenderings = ValueBuffer<Root.Rendering>()
    private let pendingOutputs = ValueBuffer<Root.Output>()
    /// The entry sequence of each pending output (only with `acknowledgedOutputs`).
    private var pendingOutputSequences: [UInt64] = []
    @exclusivity(unchecked) private var pendingCompletions: [CheckedContinuation<SendError?, Never>] = []
    @exclusivity(unchecked) private var pendingFlushes: [CheckedContinuation<Void, Never>] = []
    /// What was recorded since the last commit or hand-off (the open batch) and who commits it.
    @exclusivity(unchecked) private var openBatch = OpenBatch.empty
    /// Batches being committed in the background, oldest first, with what each holds back; the
    /// oldest `sealedRenderings` pending renderings and `sealedOutputs` outputs belong to them.
    @exclusivity(unchecked) private var sealed: [SealedRelease] = []
    @exclusivity(unchecked) private var sealedRenderings = 0
    @exclusivity(unchecked) private var sealedOutputs = 0
    @exclusivity(unchecked) private var callbacks: [UInt64: @Sendable (Any) -> Void] = [:]
    @exclusivity(unchecked) private var run = RunState.running
    /// Whether the host stopped (asked to, or by a failure): it applies nothing more.
    private var stopped: Bool { run != .running }
    private var finish = FinishPhase.open
    private var finalOutput: Root.Output?
    /// Whether the root emitted its final output (a ``FinishingWorkflow``): no more actions.
    private var finished: Bool {
        if case .open = finish { return false }
        return true
    }
    let completion = HostCompletion<Root.Output>()
    /// Called once the host has stopped (`nil` after that).
    private let stopHandlers = Lock<[@Sendable () -> Void]?>([])

    deinit {
        popped.deallocate()
    }

    /// Builds the tree and runs the first render pass on the calling thread. With `replay`, the
    /// logged entries are applied before anything is released.
    init(
        workflow: Root, observers: [any WorkflowObserver], programmerErrors: ProgrammerErrorPolicy,
        clock: any WorkflowClock = SystemClock(), dependencies: [ObjectIdentifier: any Sendable] = [:],
        bufferOutputs: Bool = true, acknowledgedOutputs: Bool = false, journal: (any RuntimeJournal)? = nil,
        restorer: (any StateRestorer)? = nil, initialSequence: UInt64? = nil,
        replay: ((any ReplayDriver) throws -> Void)? = nil, inspect: ((any RuntimeTree) -> Void)? = nil
    ) throws {
        (outputs, outputContinuation) = AsyncStream.makeStream(of: Root.Output.self)
        (acknowledgeableOutputs, acknowledgeableContinuation) = AsyncStream.makeStream(of: RootOutput<Root.Output>.self)
        self.acknowledgedOutputs = acknowledgedOutputs && journal != nil
        self.journal = journal
        let context = RuntimeContext(observers: observers, programmerErrors: programmerErrors, clock: clock)
        context.dependencies = dependencies
        context.restorer = restorer
        context.instanceID = journal?.instanceID
        context.recordsActions = journal != nil
        if let journal { context.admission = { type in journal.admit(type) } }
        context.currentSequence = initialSequence ?? journal?.currentSequence ?? 0
        context.isReplaying = replay != nil
        context.currentTime = clock.now()
        self.context = context
        root = WorkflowNode(workflow: workflow, path: NodePath(segments: [
            .init(workflowType: NodePath.typeName(Root.self), key: "")
        ]), runtime: context)
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
            if self.acknowledgedOutputs { dropAcknowledgedOutputs() }
        }
        if let inspect {
            // Inspection only: nothing is released, no worker or side effect ever starts.
            inspect(context)
            stopWithoutReleasing()
            drain(me, alreadyDraining: true)
            return
        }
        releasePending()
        drain(me, alreadyDraining: true)
    }

    /// The error that stopped the host (a durable host whose log could not be written).
    var failure: (any Error)? { failureState.withLock { $0 } }

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
    private func enqueueInBackground(_ item: QueueItem) {
        let idle = inbox.withLock { inbox -> Bool in
            inbox.queue.append(item)
            return !inbox.draining
        }
        if idle { DispatchQueue.global().async { self.drainIfIdle() } }
    }

    /// Drains what waits in the inbox unless another thread is already draining (or has).
    private func drainIfIdle() {
        let becomeDrainer = inbox.withLock { inbox -> Bool in
            if inbox.draining || inbox.queue.isEmpty { return false }
            inbox.draining = true
            return true
        }
        if becomeDrainer { drain(currentThread(), alreadyDraining: false) }
    }

    private func drain(_ me: UInt, alreadyDraining: Bool) {
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

    // MARK: Processing

    private func process(_ item: consuming QueueItem) {
        switch consume item {
        case .send(let nodeID, let action):
            _ = applySent(action, to: nodeID)
        case .sendAndWait(let nodeID, let action, let waiter):
            settle(waiter.continuation, outcome: applySent(action, to: nodeID, awaited: true))
        case .work(let work):
            _ = applyWork(work)
        case .updateRoot(let boxed):
            updateRoot(boxed)
        case .observe(let id, let callback):
            observe(id, callback)
        case .unobserve(let id):
            callbacks[id] = nil
        case .flush(let waiter):
            if openBatch != .empty { commitPendingAndRelease(.now) }
            if let completion = waiter?.continuation {
                if openBatch != .empty {
                    pendingFlushes.append(completion)
                } else if !sealed.isEmpty {
                    sealed[sealed.count - 1].flushes.append(completion)
                } else {
                    completion.resume()
                }
            }
        case .committed(let sequence):
            while let oldest = sealed.first, oldest.through <= sequence {
                releaseSealed(sealed.removeFirst())
            }
        case .journalFailed(let error):
            if !stopped { fail(error) }
        case .acknowledge(let sequence):
            acknowledge(through: sequence)
        case .stop(let waiter):
            if !stopped {
                if openBatch != .empty || !sealed.isEmpty { commitPendingAndRelease(.wait) }
                // A failed commit has stopped it meanwhile: the stop has nothing more to do there
                // than answer its waiter.
                if stopped {
                    waiter?.continuation.resume()
                    return
                }
                run = .stopped
                root.tearDown()
                context.effects.release(queue: self, observers: context.observers, hostStopped: true)
                endStreams()
                journal?.hostDidStop()
                completion.stop(failure: nil)
                runStopHandlers()
            }
            waiter?.continuation.resume()
        }
    }

    /// Resumes a `sendAndWait` once its action is committed (at once if it was not applied).
    private func settle(_ completion: CheckedContinuation<SendError?, Never>, outcome: WorkOutcome) {
        switch outcome {
        case .applied where openBatch != .empty:
            pendingCompletions.append(completion)
        case .applied where !sealed.isEmpty:
            sealed[sealed.count - 1].completions.append(completion)
        case .applied:
            completion.resume(returning: nil)
        case .discarded(let reason):
            completion.resume(returning: SendError(reason: reason, underlying: refusal(for: reason)))
        }
    }

    /// What a durable host reported about a discard: the journal's refusal, or the host's failure.
    private func refusal(for reason: DiscardReason) -> (any Error)? {
        switch reason {
        case .notLoggable: context.lastRefusal
        case .hostStopped: failure
        default: nil
        }
    }

    /// Applies an action sent through a sink to its node, with its render pass.
    /// `awaited`: the action came through `sendAndWait`, whose caller awaits its commit.
    private func applySent(_ action: any WorkflowAction, to nodeID: NodeID, awaited: Bool = false) -> WorkOutcome {
        guard !stopped else {
            context.discarded("\(type(of: action))", node: nil, reason: .hostStopped, origin: .sink)
            return .discarded(.hostStopped)
        }
        guard !finished else {
            context.discarded("\(type(of: action))", node: nil, reason: .finished, origin: .sink)
            return .discarded(.finished)
        }
        guard let node = context.node(id: nodeID) else {
            context.discarded("\(type(of: action))", node: nil, reason: .nodeEnded, origin: .sink)
            return .discarded(.nodeEnded)
        }
        setPhase(.applying)
        context.currentTime = context.clock.now()
        let outcome = node.applySent(action)
        if case .discarded(let reason) = outcome {
            setPhase(.idle)
            context.discarded("\(type(of: action))", node: node.info, reason: reason, origin: .sink, error: refusal(for: reason))
            return outcome
        }
        return recordAndRender(outcome, awaited: awaited)
    }

    // The rarer items are handled out of line: the compiler computes the metadata a function
    // body needs on entry (here `Optional<Root>`), which would otherwise cost every action.

    @inline(never)
    private func updateRoot(_ boxed: any Sendable) {
        guard !stopped, !finished, let workflow = boxed as? Root else { return }
        setPhase(.applying)
        context.currentTime = context.clock.now()
        root.update(workflow: workflow)
        if let journal {
            do {
                try journal.record(props: workflow, time: context.currentTime, tree: context)
                context.currentSequence = journal.currentSequence
            } catch {
                fail(error)
                return
            }
        }
        renderPassAndRelease()
    }

    /// Logs the consumer's acknowledgement of root outputs (durable hosts), committed as the
    /// mode commits entries; no action is applied and no render pass runs.
    @inline(never)
    private func acknowledge(through sequence: UInt64) {
        guard !stopped, let journal, sequence > context.acknowledgedThrough else { return }
        do {
            try journal.record(acknowledgement: sequence, time: context.clock.now())
            context.currentSequence = journal.currentSequence
            context.acknowledgedThrough = sequence
            follow(try journal.renderPassDidFinish(tree: context, listener: self, awaited: false))
        } catch {
            fail(error)
        }
    }

    /// After replay: forgets the outputs of entries the consumer had acknowledged.
    private func dropAcknowledgedOutputs() {
        let acknowledged = context.acknowledgedThrough
        var kept: [(UInt64, Root.Output)] = []
        var index = 0
        pendingOutputs.drain { output in
            if pendingOutputSequences[index] > acknowledged { kept.append((pendingOutputSequences[index], output)) }
            index += 1
        }
        pendingOutputSequences = kept.map(\.0)
        for (_, output) in kept { pendingOutputs.append(output) }
    }

    @inline(never)
    private func observe(_ id: UInt64, _ callback: @escaping @Sendable (Any) -> Void) {
        guard !stopped else { return }
        callbacks[id] = callback
        callback(publisher.current as Any)
    }

    private func applyWork(_ work: any QueuedWork) -> WorkOutcome {
        guard !stopped else {
            context.discarded(work.description, node: nil, reason: .hostStopped, origin: work.origin)
            return .discarded(.hostStopped)
        }
        guard !finished else {
            context.discarded(work.description, node: nil, reason: .finished, origin: work.origin)
            return .discarded(.finished)
        }
        guard let node = context.node(id: work.nodeID) else {
            context.discarded(work.description, node: nil, reason: .nodeEnded, origin: work.origin)
            return .discarded(.nodeEnded)
        }
        setPhase(.applying)
        context.currentTime = context.clock.now()
        let outcome = work.apply(to: node)
        if case .discarded(let reason) = outcome {
            setPhase(.idle)
            context.discarded(work.description, node: node.info, reason: reason, origin: work.origin, error: refusal(for: reason))
            return outcome
        }
        return recordAndRender(outcome)
    }

    /// Logs the action just applied (durable hosts), then renders and releases.
    private func recordAndRender(_ outcome: WorkOutcome, awaited: Bool = false) -> WorkOutcome {
        // Moved out (`take`), not copied then cleared: the compiler merges the outlined copies and
        // destroys of these optionals into generic ones that go through value witnesses.
        if let journal, let applied = context.takeLastApplied(), let path = context.lastAppliedPath.take() {
            do {
                try journal.record(action: applied, at: path, origin: context.lastAppliedOrigin, time: context.currentTime)
                for attachment in context.pendingAttachments { journal.attach(attachment) }
                context.currentSequence = journal.currentSequence
                if case .reached = finish {
                    journal.finish()
                    finish = .recorded(through: journal.currentSequence)
                }
            } catch {
                fail(error)
                return .discarded(.hostStopped)
            }
        }
        if !context.pendingAttachments.isEmpty { context.pendingAttachments = [] }
        if case .reached = finish { finish = .recorded(through: 0) }
        renderPassAndRelease(awaited: awaited)
        return stopped ? .discarded(.hostStopped) : outcome
    }

    /// One render pass from the root; its rendering and effects join the pending ones.
    private func renderPass() {
        setPhase(.rendering)
        let rendering = context.observers.isEmpty ? root.render() : timedRender()
        if context.isReplaying { pendingRenderings.removeAll() }
        pendingRenderings.append(consume rendering)
        setPhase(.idle)
    }

    /// The root's render, timed for the observers. (Out of line: an optional `ContinuousClock.Instant`
    /// is handled through runtime value witnesses, which cost every render pass when inline.)
    @inline(never)
    private func timedRender() -> Root.Rendering {
        let finish = context.observers.compactMap { $0.renderPassWillStart() }
        let start = ContinuousClock.now
        let rendering = root.render()
        let duration = ContinuousClock.now - start
        for completion in finish { completion(duration) }
        return rendering
    }

    /// A render pass, then the release of everything pending once the journal (if any) says it
    /// is committed. `awaited`: the action applied came through `sendAndWait`.
    private func renderPassAndRelease(awaited: Bool = false) {
        renderPass()
        guard let journal else {
            releasePending()
            return
        }
        do {
            follow(try journal.renderPassDidFinish(tree: context, listener: self, awaited: awaited))
        } catch {
            fail(error)
        }
    }

    private func commitPendingAndRelease(_ urgency: CommitUrgency) {
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
    private func follow(_ progress: CommitProgress) {
        switch progress {
        case .committed:
            openBatch = .empty
            while !sealed.isEmpty { releaseSealed(sealed.removeFirst()) }
            releasePending()
        case .held:
            if openBatch == .empty { openBatch = .held }
        case .committing:
            sealed.append(SealedRelease(
                through: context.currentSequence, renderings: pendingRenderings.count - sealedRenderings,
                outputs: pendingOutputs.count - sealedOutputs, effects: context.effects,
                completions: pendingCompletions, flushes: pendingFlushes))
            sealedRenderings = pendingRenderings.count
            sealedOutputs = pendingOutputs.count
            context.effects = EffectBatch()
            pendingCompletions.removeAll()
            pendingFlushes.removeAll()
            openBatch = .empty
        }
    }

    // MARK: JournalListener (any thread)

    // The journal calls these from its background worker or a timer: they never make that thread
    // the drainer, so a worker does not end up applying the host's actions instead of committing,
    // and a host keeps the thread it runs on.

    func journalDidCommit(through sequence: UInt64) {
        enqueueInBackground(.committed(sequence))
    }

    func journalDidFail(_ error: any Error) {
        failureState.withLock { $0 = $0 ?? error }
        enqueueInBackground(.journalFailed(error))
    }

    func journalWantsCommit() {
        enqueueInBackground(.flush(nil))
    }

    /// Releases what a batch committed in the background held back, in the order it was held.
    private func releaseSealed(_ batch: SealedRelease) {
        setPhase(.releasing)
        var effects = batch.effects
        effects.release(queue: self, observers: context.observers)
        if callbacks.isEmpty {
            pendingRenderings.drain(prefix: batch.renderings, movingRun: publisher.publish(movingAll:count:))
        } else {
            pendingRenderings.drain(prefix: batch.renderings, movingEach: publish(movingFrom:))
        }
        sealedRenderings -= batch.renderings
        if batch.outputs > 0 { deliverOutputs(prefix: batch.outputs) }
        for completion in batch.completions { completion.resume(returning: nil) }
        for flush in batch.flushes { flush.resume() }
        if case .recorded(let through) = finish, through <= batch.through { settleFinish() }
        setPhase(.idle)
    }

    /// Publishes pending renderings (each, in order), delivers outputs, stops and starts workers
    /// and side effects, and resumes waiters.
    private func releasePending() {
        setPhase(.releasing)
        context.effects.release(queue: self, observers: context.observers)
        pendingRenderings.drain(movingEach: publish(movingFrom:))
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

    // MARK: Finishing

    /// How a ``FinishingWorkflow`` root tells its final output, or `nil` for other roots.
    private static func finalOutputCheck() -> ((Root, Root.Output) -> Bool)? {
        guard let finishing = Root.self as? any FinishingWorkflow.Type else { return nil }
        func check<F: FinishingWorkflow>(_: F.Type) -> (Root, Root.Output) -> Bool {
            { root, output in (root as! F).isFinal(output as! F.Output) }
        }
        return check(finishing)
    }

    /// The root emitted its final output (live or in replay): the action that emitted it is the
    /// instance's last, and its journal entry completes the instance.
    @inline(never)
    private func reachedFinal(_ output: Root.Output) {
        finalOutput = output
        finish = context.isReplaying ? .recorded(through: context.currentSequence) : .reached
    }

    /// The final action is committed and its consequences released: the result goes to
    /// `completion`, and the host stops after the work already queued.
    private func settleFinish() {
        finish = .settled
        if let finalOutput { completion.finish(finalOutput) }
        enqueue(.stop(nil))
    }

    /// Makes the rendering at `pending` the host's current one (it moves into the publisher,
    /// leaving `pending` uninitialised), for its streams, then its callbacks.
    private func publish(movingFrom pending: UnsafeMutablePointer<Root.Rendering>) {
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
    private func deliverOutputs() {
        if acknowledgedOutputs { return deliverAcknowledgeable(count: pendingOutputs.count) }
        pendingOutputs.drain { outputContinuation.yield($0) }
    }

    @inline(never)
    private func deliverOutputs(prefix: Int) {
        if acknowledgedOutputs {
            deliverAcknowledgeable(count: prefix)
        } else {
            pendingOutputs.drain(prefix: prefix) { outputContinuation.yield($0) }
        }
        sealedOutputs -= prefix
    }

    /// Delivers the oldest `count` pending outputs with their sequences.
    private func deliverAcknowledgeable(count: Int) {
        var index = 0
        pendingOutputs.drain(prefix: count) { output in
            acknowledgeableContinuation.yield(RootOutput(sequence: pendingOutputSequences[index], value: output))
            index += 1
        }
        pendingOutputSequences.removeFirst(count)
    }

    /// Stops the host after a journal failure: nothing uncommitted leaves the runtime.
    private func fail(_ error: any Error) {
        failureState.withLock { $0 = $0 ?? error }
        // The journal lets go of the instance first: a waiter resumed below may resume it at once.
        journal?.hostDidStop()
        stopWithoutReleasing()
    }

    private func stopWithoutReleasing() {
        run = .failed
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
        completion.stop(failure: failure)
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

    private func runStopHandlers() {
        let handlers = stopHandlers.withLock { handlers in
            defer { handlers = nil }
            return handlers ?? []
        }
        for handler in handlers { handler() }
    }

    private func endStreams() {
        callbacks.removeAll()
        publisher.finish()
        outputContinuation.finish()
        acknowledgeableContinuation.finish()
    }

    @inline(__always)
    private func setPhase(_ newPhase: Phase) {
        phase.store(newPhase.rawValue, ordering: .relaxed)
    }

    private func describe(_ item: QueueItem) -> String {
        switch item {
        case .send(_, let action), .sendAndWait(_, let action, _): return "An action (\(type(of: action)))"
        case .work(let work): return "An action (\(work.description))"
        case .updateRoot: return "A props update"
        default: return "A request"
        }
    }

    // MARK: Replay

    /// Applies logged entries during init, on the init thread (the drainer).
    private struct Replayer: ReplayDriver {
        // Owner: the runtime's init makes this driver and runs replay with it before returning;
        // the runtime holds its context.
        unowned(unsafe) let runtime: WorkflowRuntime
        unowned(unsafe) let context: RuntimeContext

        init(runtime: WorkflowRuntime) {
            self.runtime = runtime
            self.context = runtime.context
        }

        var tree: any RuntimeTree { context }

        func apply<Action: WorkflowAction>(
            _ action: Action, at path: NodePath, origin: ActionOrigin, time: WallTime, sequence: UInt64
        ) throws(ReplayMismatch) {
            guard let found = context.node(at: path) else { throw .noNode(path) }
            guard found.workflowTypeID == ObjectIdentifier(Action.WorkflowType.self) else {
                throw .wrongWorkflowType(path, expected: NodePath.typeName(Action.WorkflowType.self))
            }
            let node = unsafeDowncast(found as AnyObject, to: WorkflowNode<Action.WorkflowType>.self)
            context.currentTime = time
            context.replayingSequence = sequence
            runtime.setPhase(.applying)
            node.apply(action, origin: origin)
            context.discardLastApplied()
            context.currentSequence = sequence
            runtime.renderPass()
        }

        func acknowledged(through: UInt64, sequence: UInt64) {
            context.acknowledgedThrough = max(context.acknowledgedThrough, through)
            context.currentSequence = sequence
        }

        func updateRoot(props: any Sendable, time: WallTime, sequence: UInt64) throws(ReplayMismatch) {
            guard let workflow = props as? Root else { throw .wrongPropsType("\(type(of: props))") }
            context.currentTime = time
            runtime.root.update(workflow: workflow)
            context.currentSequence = sequence
            runtime.renderPass()
        }
    }
}

// Outside the generic runtime so that the unspecialised runtime needs no metadata lookup for them.

/// What a batch handed to the journal's background commit holds back until it is committed.
private struct SealedRelease {
    /// The batch's last sequence.
    let through: UInt64
    /// How many of the oldest pending renderings and outputs are the batch's.
    let renderings: Int
    let outputs: Int
    var effects: EffectBatch
    var completions: [CheckedContinuation<SendError?, Never>]
    var flushes: [CheckedContinuation<Void, Never>]
}

/// The runtime's queue and whether a thread is draining it.
private struct Inbox {
    let queue = ValueBuffer<QueueItem>(capacity: 16)
    var draining = false
}

/// Where a finishing root's final output stands.
private enum FinishPhase {
    /// Not emitted.
    case open
    /// Emitted by the action being applied, not yet recorded in the journal.
    case reached
    /// Recorded as the entry at `through` (0 in memory): released with that entry's commit.
    case recorded(through: UInt64)
    /// Delivered to `completion`.
    case settled
}

/// What the open batch of a durable host holds, and who asks for its commit.
private enum OpenBatch {
    /// Nothing recorded since the last commit or hand-off.
    case empty
    /// Entries the runtime commits when its queue runs empty (or at once when someone waits).
    case held
    /// Entries the journal holds for a group commit and will ask for (`journalWantsCommit`),
    /// unless someone waits for them first.
    case deferred
}

/// Whether the host runs.
private enum RunState {
    case running
    /// Stopped when asked, after committing and releasing what it held.
    case stopped
    /// Stopped without releasing anything uncommitted: a journal failure, or an inspection.
    case failed
}

/// What the drainer is doing, for the "sent during render" check.
private enum Phase: UInt8 {
    case idle, applying, rendering, releasing
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

/// What an `enqueue` made of its thread. (Outside the runtime: a type nested in a generic class
/// is generic too, and its metadata was looked up on every send.)
private enum DrainClaim {
    /// Another thread drains: the item waits in the queue for it.
    case queued
    /// This thread drains, and the item (the queue was empty) is processed first.
    case direct
    /// This thread drains the queue, the item last.
    case drainer
}
