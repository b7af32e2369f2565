import Synchronization
import WorkflowLocks

/// The control plane's requests on a durable host's instance (rule O2): pause, unpause, cancel,
/// terminate and delete. Each is logged as an entry of the instance's log, committed at once,
/// before it takes effect, and answered after that commit; replay applies the same entries
/// (``Replayer/control(_:number:time:sequence:)``), so a restarted host is paused, cancelling or
/// ended exactly as its log says.
///
/// Requests are numbered per instance in the order they were made; the tree's
/// ``ControlState/lastRequest`` is the last one applied, so a request handed over again (after a
/// restart lost its answer) is answered without being applied twice.
extension WorkflowRuntime: ControlReceiver {
    /// How long a pause waits for the task attempts in flight to report before it is logged:
    /// their outcomes are applied first, so that none waits, paused, in memory (a restart would
    /// drop it and the attempt would run again).
    static var pauseSettleLimit: Duration { .seconds(30) }

    // MARK: From the store's dispatcher (any thread)

    func receive(_ command: ControlCommand) {
        enqueueInBackground(.control(command))
    }

    // MARK: On the drainer

    /// Keeps `item` for the unpause: the instance is paused.
    func hold(_ item: consuming QueueItem) {
        held.append(item)
    }

    @inline(never)
    func applyControl(_ command: ControlCommand) {
        // A stopped host's requests go to the next host of the instance.
        guard let journal, !stopped else { return }
        let number = command.number
        if finished {
            if number != 0 { journal.answer(control: number, outcome: .refused("the instance has ended")) }
            return
        }
        if number != 0, number <= context.control.lastRequest {
            journal.answer(control: number, outcome: .alreadyApplied)
            return
        }
        switch command.verb {
        case .pause:
            pause(command, journal: journal)
        case .unpause:
            unpause(command, journal: journal)
        case .cancel(let deadline):
            cancel(command, deadline: deadline, journal: journal)
        case .terminate:
            end(.terminated(reason: command.reason), for: command, journal: journal)
        case .delete:
            delete(command, journal: journal)
        case .endCancellation:
            // The deadline's timer: held while paused, as the workflows' timers are.
            if holding { return hold(.control(command)) }
            guard context.control.cancellation != nil else { return }
            end(.cancelled(reason: "its cancel request's deadline passed"), for: command, journal: journal)
        }
    }

    private func pause(_ command: ControlCommand, journal: any RuntimeJournal) {
        if let underWay = pauseUnderWay {
            if command.attemptsSettled {
                // The attempts in flight reported (or the limit passed): the pause is logged,
                // unless a later request took its place.
                guard underWay.number == command.number else { return }
                pauseUnderWay = nil
            } else {
                journal.answer(control: command.number, outcome: .unchanged("a pause (request \(underWay.number)) is under way"))
                return
            }
        } else if command.attemptsSettled {
            return
        } else if context.control.paused {
            journal.answer(control: command.number, outcome: .unchanged("the instance is paused already"))
            return
        } else {
            // No attempt starts from now on; those in flight report first.
            drainGate.pause()
            if drainGate.hasAttemptsInFlight {
                pauseUnderWay = command
                var settled = command
                settled.attemptsSettled = true
                let gate = drainGate
                Task {
                    _ = await gate.idle(within: Self.pauseSettleLimit)
                    self.enqueueInBackground(.control(settled))
                }
                return
            }
        }
        logControl(.pause, for: command, journal: journal) {
            context.control.paused = true
            holding = true
        }
    }

    private func unpause(_ command: ControlCommand, journal: any RuntimeJournal) {
        guard context.control.paused else {
            let outcome: ControlOutcome = pauseUnderWay.map { .refused("a pause (request \($0.number)) is under way: unpause once it is logged") }
                ?? .unchanged("the instance is not paused")
            journal.answer(control: command.number, outcome: outcome)
            return
        }
        logControl(.unpause, for: command, journal: journal) {
            context.control.paused = false
            holding = false
        }
        guard !stopped else { return }
        drainGate.unpause()
        // What waited is applied now, in the order it came, ahead of what came after the unpause.
        var waiting: [QueueItem] = []
        swap(&waiting, &held)
        for item in waiting { process(item) }
    }

    private func cancel(_ command: ControlCommand, deadline: Duration?, journal: any RuntimeJournal) {
        if context.control.paused || pauseUnderWay != nil {
            journal.answer(control: command.number, outcome: .refused(
                "the instance is paused: unpause it to cancel it (its workflow cleans up), or terminate it"))
            return
        }
        if let cancellation = context.control.cancellation {
            journal.answer(control: command.number, outcome: .unchanged("a cancel request is being handled since \(cancellation.requestedAt)"))
            return
        }
        // A root that handles no cancel request ends at once.
        guard Root.self is any CancellableWorkflow.Type else {
            return end(.cancelled(reason: command.reason), for: command, journal: journal)
        }
        let now = context.clock.now()
        let request = CancellationRequest(reason: command.reason, requestedAt: now, deadline: deadline.map { now + $0 })
        logControl(.cancel(request), for: command, time: now, rendering: true, journal: journal) {
            context.control.cancellation = request
            root.deliverCancellation(request)
            context.discardLastApplied()
        }
        if !stopped, !finished { scheduleCancelDeadline() }
    }

    /// Ends the instance now, as `ending` says (its status is set with the entry).
    private func end(_ ending: InstanceEnding, for command: ControlCommand, journal: any RuntimeJournal) {
        logControl(.end(ending), for: command, journal: journal) {
            self.ending = ending
            finish = .recorded(through: context.currentSequence)
        }
    }

    private func delete(_ command: ControlCommand, journal: any RuntimeJournal) {
        // What was applied is committed first; the journal deletes the instance as the host lets go of it.
        if openBatch != .empty || !sealed.isEmpty { commitPendingAndRelease(.wait) }
        guard !stopped else { return }
        context.control.lastRequest = command.number
        ending = .deleted
        journal.deleteOnStop(request: command.number)
        process(.stop(nil))
    }

    /// Logs `effect` for `command`, applies it to the tree (`apply`), runs its render pass when
    /// `rendering` (a cancel request's handlers changed states), commits at once and answers the
    /// request with the entry's sequence. A commit that fails stops the host: the request stays
    /// unanswered for the next host.
    private func logControl(
        _ effect: ControlEntryEffect, for command: ControlCommand, time: WallTime? = nil, rendering: Bool = false,
        journal: any RuntimeJournal, apply: () -> Void
    ) {
        setPhase(.applying)
        context.currentTime = time ?? context.clock.now()
        do {
            try journal.record(control: effect, number: command.number, reason: command.reason, at: root.info.path, time: context.currentTime)
        } catch {
            setPhase(.idle)
            fail(error)
            return
        }
        context.currentSequence = journal.currentSequence
        let sequence = context.currentSequence
        if command.number != 0 { context.control.lastRequest = command.number }
        if let underWay = pauseUnderWay, underWay.number != command.number {
            // A later request went first: the pause waiting for its attempts is dropped.
            pauseUnderWay = nil
            if !context.control.paused { drainGate.unpause() }
            journal.answer(control: underWay.number, outcome: .refused("request \(command.number) was applied before the pause could be"))
        }
        apply()
        if case .reached = finish {
            // The cancel request's handler emitted the final output: the instance ends cancelled.
            journal.finish(asCancelled: true)
            finish = .recorded(through: sequence)
        }
        if rendering {
            renderPassAndRelease()
        } else {
            setPhase(.idle)
            do {
                follow(try journal.renderPassDidFinish(tree: context, listener: self, awaited: false))
            } catch {
                fail(error)
            }
        }
        if !stopped, openBatch != .empty || !sealed.isEmpty { commitPendingAndRelease(.wait) }
        // Answered once committed (a failed commit stopped the host: nothing is answered).
        if !stopped, command.number != 0 {
            journal.answer(control: command.number, outcome: .applied(sequence: sequence))
        }
    }

    /// Starts the timer that ends the instance at its cancel request's deadline, if it has one.
    func scheduleCancelDeadline() {
        guard let deadline = context.control.cancellation?.deadline, cancelDeadline == nil else { return }
        let clock = context.clock
        cancelDeadline = Task { [weak self] in
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return
            }
            self?.enqueueInBackground(.control(ControlCommand(verb: .endCancellation, number: 0, reason: nil)))
        }
    }

    /// The host stops: the deadline's timer ends, and what waited for an unpause is dropped (a
    /// timer or a signal comes again after a resume; a waiting sender learns it was not applied).
    func endControl() {
        cancelDeadline?.cancel()
        cancelDeadline = nil
        pauseUnderWay = nil
        guard !held.isEmpty else { return }
        var waiting: [QueueItem] = []
        swap(&waiting, &held)
        holding = false
        for item in waiting {
            switch item {
            case .sendAndWait(_, let action, let waiter):
                context.discarded("\(type(of: action))", node: nil, reason: .hostStopped, origin: .sink)
                waiter.resume(returning: SendError(reason: .hostStopped))
            case .send(_, let action):
                context.discarded("\(type(of: action))", node: nil, reason: .hostStopped, origin: .sink)
            case .work(let work):
                context.discarded(work.description, node: nil, reason: .hostStopped, origin: work.origin)
            default:
                break
            }
        }
    }
}
