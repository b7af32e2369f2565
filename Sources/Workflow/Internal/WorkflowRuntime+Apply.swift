import Synchronization
import WorkflowLocks

/// Applying an item: an action with its cascade and render pass, props updates, observations.
extension WorkflowRuntime {
    // MARK: Processing

    func process(_ item: consuming QueueItem) {
        switch consume item {
        case .send(let nodeID, let action):
            if holding { return hold(.send(nodeID, action)) }
            _ = applySent(action, to: nodeID)
        case .sendAndWait(let nodeID, let action, let waiter):
            if holding { return hold(.sendAndWait(nodeID, action, waiter)) }
            settle(waiter, outcome: applySent(action, to: nodeID, awaited: true))
        case .work(let work):
            if holding { return hold(.work(work)) }
            _ = applyWork(work)
        case .updateRoot(let boxed):
            if holding { return hold(.updateRoot(boxed)) }
            updateRoot(boxed)
        case .control(let command):
            applyControl(command)
        case .observe(let id, let callback):
            observe(id, callback)
        case .unobserve(let id):
            callbacks[id] = nil
        case .flush(let waiter):
            if openBatch != .empty { commitPendingAndRelease(.now) }
            if let completion = waiter {
                if openBatch != .empty {
                    pendingFlushes.append(completion)
                } else if !sealed.isEmpty {
                    sealed[sealed.count - 1].flushes.append(completion)
                } else {
                    completion.resume()
                }
            }
        case .committed(let sequence):
            // The oldest's sequence is read in place: `sealed.first` would copy the whole batch.
            while !sealed.isEmpty, sealed[0].through <= sequence {
                var batch = takeOldestSealed()
                releaseSealed(&batch)
            }
        case .journalFailed(let error):
            if !stopped { fail(error) }
        case .acknowledge(let sequence):
            if holding { return hold(.acknowledge(sequence)) }
            acknowledge(through: sequence)
        case .stop(let waiter):
            if !stopped {
                if openBatch != .empty || !sealed.isEmpty { commitPendingAndRelease(.wait) }
                // A failed commit has stopped it meanwhile: the stop has nothing more to do there
                // than answer its waiter.
                if stopped {
                    waiter?.resume()
                    return
                }
                run = .stopped
                endControl()
                root.tearDown()
                context.effects.release(queue: self, observers: context.observers, hostStopped: true)
                endStreams()
                journal?.hostDidStop()
                settleCompletion(failure: nil)
                runStopHandlers()
            }
            waiter?.resume()
        }
    }

    /// Resumes a `sendAndWait` once its action is committed (at once if it was not applied).
    func settle(_ completion: Waiter<SendError?>, outcome: WorkOutcome) {
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
    func refusal(for reason: DiscardReason) -> (any Error)? {
        switch reason {
        case .notLoggable: context.lastRefusal
        case .hostStopped: failure
        default: nil
        }
    }

    /// Applies an action sent through a sink to its node, with its render pass.
    /// `awaited`: the action came through `sendAndWait`, whose caller awaits its commit.
    func applySent(_ action: any WorkflowAction, to nodeID: NodeID, awaited: Bool = false) -> WorkOutcome {
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
    func updateRoot(_ boxed: any Sendable) {
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
    func acknowledge(through sequence: UInt64) {
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
    func dropAcknowledgedOutputs() {
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
    func observe(_ id: UInt64, _ callback: @escaping @Sendable (Any) -> Void) {
        guard !stopped else { return }
        callbacks[id] = callback
        callback(publisher.current as Any)
    }

    func applyWork(_ work: any QueuedWork) -> WorkOutcome {
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
    func recordAndRender(_ outcome: WorkOutcome, awaited: Bool = false) -> WorkOutcome {
        // Moved out (`take`), not copied then cleared: the compiler merges the outlined copies and
        // destroys of these optionals into generic ones that go through value witnesses.
        if let journal, let applied = context.takeLastApplied(), let path = context.lastAppliedPath.take() {
            do {
                try journal.record(action: applied, at: path, origin: context.lastAppliedOrigin, time: context.currentTime)
                for attachment in context.pendingAttachments { journal.attach(attachment) }
                context.currentSequence = journal.currentSequence
                if case .reached = finish {
                    journal.finish(asCancelled: context.control.cancellation != nil)
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
    func renderPass() {
        setPhase(.rendering)
        let rendering = context.observers.isEmpty ? root.render() : timedRender()
        if context.isReplaying { pendingRenderings.removeAll() }
        pendingRenderings.append(consume rendering)
        setPhase(.idle)
    }

    /// The root's render, timed for the observers. (Out of line: an optional `ContinuousClock.Instant`
    /// is handled through runtime value witnesses, which cost every render pass when inline.)
    @inline(never)
    func timedRender() -> Root.Rendering {
        let finish = context.observers.compactMap { $0.renderPassWillStart() }
        let start = ContinuousClock.now
        let rendering = root.render()
        let duration = ContinuousClock.now - start
        for completion in finish { completion(duration) }
        return rendering
    }

    /// A render pass, then the release of everything pending once the journal (if any) says it
    /// is committed. `awaited`: the action applied came through `sendAndWait`.
    func renderPassAndRelease(awaited: Bool = false) {
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
}
