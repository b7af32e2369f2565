import Foundation
import Logging
import Workflow
import WorkflowStorage

/// A verb of the control plane (rule O2).
public typealias ControlVerb = WorkflowStorage.ControlVerb

/// What became of a control request, as its requester learns it.
public struct ControlAnswer: Sendable, Hashable, Codable, CustomStringConvertible {
    public typealias Outcome = ControlAnswerRecord.Outcome

    /// The instance it was for.
    public let instance: String
    /// Its number within the instance (0: refused before it was recorded).
    public let request: UInt64
    public let verb: ControlVerb
    /// Applied, unchanged (the instance was already as asked), or refused.
    public let outcome: Outcome
    /// The log entry that applied it, when one did.
    public let sequence: UInt64?
    /// Why, in a few words.
    public let detail: String
    /// Who answered: the host that runs the instance (`host of pid 4711 on host-a`), or the
    /// requester itself when no live host ran it.
    public let answeredBy: String

    public var description: String {
        let entry = sequence.map { " (entry \($0))" } ?? ""
        return "\(verb.rawValue) \(instance): \(outcome.rawValue)\(entry), \(detail), by \(answeredBy)"
    }
}

/// What control requests did to an instance (rule O2), as its log says.
public struct InstanceControlState: Sendable, Hashable, Codable {
    /// Paused: its host applies no action and fires no timer.
    public let paused: Bool
    /// The cancel request its workflows are handling (a cancellation in progress), if any.
    public let cancellation: CancellationRequest?
    /// The number of the last control request applied to it (0: none).
    public let lastRequest: UInt64
}

extension ControlVerb {
    /// What the verb did, in a sentence: `cancelled`, `paused`, `deleted`.
    public var pastTense: String {
        switch self {
        case .cancel: "cancelled"
        case .terminate: "terminated"
        case .pause: "paused"
        case .unpause: "unpaused"
        case .delete: "deleted"
        }
    }
}

/// The control plane (rule O2): verbs an operator (or a service) applies to running instances,
/// wherever their hosts run. A request is recorded in the store, handed to the process whose host
/// runs the instance (woken by the store's change feed), logged there as an entry of the
/// instance's log, committed, and answered; the caller waits for the answer. An instance no live
/// host runs is changed by the caller itself, with the same entries.
extension WorkflowStore {
    /// Asks the host that runs instance `id` to cancel it (rule O2): its workflows see the request
    /// (a ``CancellableWorkflow`` cleans up, and ends the instance as cancelled with its final
    /// output), and the instance is ended as cancelled at `deadline` after the host applies it if
    /// it has not ended by then (`nil`: no deadline). A root that handles no cancel request, or an
    /// instance no live host runs, ends at once. Waits up to `timeout` for the answer.
    ///
    /// Throws ``DurableError/Kind/controlNotAnswered`` when the live host that runs the instance
    /// does not answer in time (the request stays recorded: that host, or the instance's next
    /// one, applies it).
    @discardableResult
    public func cancel(id: String, reason: String? = nil, deadline: Duration? = .seconds(60), timeout: Duration = .seconds(10)) throws -> ControlAnswer {
        try control(.cancel, id: id, reason: reason, deadline: deadline, timeout: timeout)
    }

    /// Ends instance `id` at once, as terminated: its workers are cancelled and its workflows are
    /// told nothing (rule O2). Waits up to `timeout` for the answer of the host that runs it.
    @discardableResult
    public func terminate(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) throws -> ControlAnswer {
        try control(.terminate, id: id, reason: reason, timeout: timeout)
    }

    /// Pauses instance `id` (rule O2): once the task attempts in flight have reported, its host
    /// applies no action and fires no timer; sends, worker outputs, timers and signal deliveries
    /// wait, in order, for ``unpause(id:timeout:)``. It stays paused across restarts (its status
    /// is `paused`, and a service does not resume it).
    @discardableResult
    public func pause(id: String, reason: String? = nil, timeout: Duration = .seconds(40)) throws -> ControlAnswer {
        try control(.pause, id: id, reason: reason, timeout: timeout)
    }

    /// Unpauses instance `id`: what waited is applied, in order (a timer that came due fires once).
    /// An instance no live host holds becomes running, and a service adopts it.
    @discardableResult
    public func unpause(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) throws -> ControlAnswer {
        try control(.unpause, id: id, reason: reason, timeout: timeout)
    }

    /// Deletes instance `id` (its record, log and snapshots), stopping the host that runs it first.
    @discardableResult
    public func delete(id: String, timeout: Duration) throws -> ControlAnswer {
        try control(.delete, id: id, timeout: timeout)
    }

    /// Applies `verb` to instance `id` as the verbs above do. `requestedBy` names who asks, in the
    /// recorded request (by default this process: its name and identity).
    public func control(
        _ verb: ControlVerb, id: String, reason: String? = nil, deadline: Duration? = nil, timeout: Duration = .seconds(10),
        requestedBy: String? = nil
    ) throws -> ControlAnswer {
        let answers = try control(verb, ids: [id], reason: reason, deadline: deadline, timeout: timeout, requestedBy: requestedBy)
        if let answer = answers.first { return answer }
        throw notFound(id)
    }

    /// Applies `verb` to each of instances `ids` (a bulk verb: every request is recorded in one
    /// transaction, then each is answered by the host that runs its instance, or applied here
    /// when no live host does). Answers in the order of `ids`; an id with no instance is left
    /// out. Throws ``DurableError/Kind/controlNotAnswered`` when live hosts did not answer every
    /// request within `timeout` (those requests stay recorded).
    public func control(
        _ verb: ControlVerb, ids: [String], reason: String? = nil, deadline: Duration? = nil, timeout: Duration = .seconds(10),
        requestedBy: String? = nil
    ) throws -> [ControlAnswer] {
        var wait = try post(verb, ids: ids, reason: reason, deadline: deadline, timeout: timeout, requestedBy: requestedBy)
        let feed = try? backend.signalStorage().changeFeed()
        feed?.announce()
        while try !wait.step(self) {
            _ = feed?.wait(timeout: .milliseconds(100)) ?? {
                Thread.sleep(forTimeInterval: 0.02)
                return false
            }()
        }
        return wait.answers(in: ids)
    }

    /// As ``control(_:ids:reason:deadline:timeout:)``, suspending the calling task while it waits.
    public func control(
        _ verb: ControlVerb, ids: [String], reason: String? = nil, deadline: Duration? = nil, timeout: Duration = .seconds(10),
        requestedBy: String? = nil
    ) async throws -> [ControlAnswer] {
        var wait = try post(verb, ids: ids, reason: reason, deadline: deadline, timeout: timeout, requestedBy: requestedBy)
        (try? backend.signalStorage().changeFeed())?.announce()
        while try !wait.step(self) {
            try await Task.sleep(for: wait.pause)
        }
        return wait.answers(in: ids)
    }

    /// Records a request of `verb` for each instance of `ids` that takes one (an ended instance
    /// is answered at once), in one transaction.
    private func post(
        _ verb: ControlVerb, ids: [String], reason: String?, deadline: Duration?, timeout: Duration, requestedBy: String?
    ) throws -> ControlWait {
        var wait = ControlWait(verb: verb, timeout: timeout)
        var requests: [NewControlRequest] = []
        let now = WallTime.now().nanosecondsSinceEpoch
        for id in ids {
            guard let record = try record(id: id) else { continue }
            if let refusal = Self.refusal(of: verb, for: record) {
                wait.answers[id] = ControlAnswer(instance: id, request: 0, verb: verb, outcome: refusal.outcome, sequence: nil,
                                                 detail: refusal.detail, answeredBy: ControlDispatcher.requester)
                continue
            }
            requests.append(NewControlRequest(
                instance: id, verb: verb, reason: reason, deadline: deadline.map { Self.nanoseconds($0) },
                requestedBy: requestedBy ?? ControlDispatcher.requester, requested: now))
        }
        let posted = try storageCall(instance: ids.count == 1 ? ids.first : nil) { () throws(StorageFailure) in
            try backend.postControlRequests(requests)
        }
        for stored in posted.compactMap({ $0 }) { wait.waiting[stored.instance] = stored.number }
        return wait
    }

    /// Requests recorded and not answered yet, and the answers so far.
    private struct ControlWait {
        let verb: ControlVerb
        let timeout: Duration
        let started = ContinuousClock.now
        var waiting: [String: UInt64] = [:]
        var answers: [String: ControlAnswer] = [:]

        /// When the holders' liveness was last looked at.
        var checkedHolders: ContinuousClock.Instant?
        /// How long the async wait sleeps before the next step (it backs off to 100 ms).
        var pause: Duration = .milliseconds(2)

        /// Takes the answers that came, applies the requests of instances no live host runs
        /// (looked at every 200 ms), and says whether every request is answered; throws once
        /// `timeout` has passed with some not.
        mutating func step(_ store: WorkflowStore) throws -> Bool {
            guard !waiting.isEmpty else { return true }
            if waiting.count <= 8 {
                // A few: each instance's own requests (a short read each).
                for (id, number) in waiting {
                    if let answer = try store.answer(of: id, number: number, verb: verb) {
                        answers[id] = answer
                        waiting[id] = nil
                    }
                }
            } else {
                // Many (a bulk verb): one read of what is pending, then the answers of those that are not.
                let pending = try store.storageCall(instance: nil) { () throws(StorageFailure) in try store.backend.pendingControlRequests() }
                let stillPending = Set(pending.map { "\($0.instance)#\($0.number)" })
                for (id, number) in waiting where !stillPending.contains("\(id)#\(number)") {
                    if let answer = try store.answer(of: id, number: number, verb: verb) { answers[id] = answer }
                    waiting[id] = nil
                }
            }
            let now = ContinuousClock.now
            if !waiting.isEmpty, checkedHolders.map({ now - $0 >= .milliseconds(200) }) ?? true {
                checkedHolders = now
                for (id, number) in waiting {
                    guard let record = try store.record(id: id) else {
                        waiting[id] = nil
                        continue
                    }
                    if try !store.holderIsAlive(record) { try store.applyWithoutHost(id, through: number) }
                }
            }
            guard !waiting.isEmpty else { return true }
            if now - started >= timeout {
                let late = waiting.keys.sorted()
                throw DurableError(
                    .controlNotAnswered, store: store.path, instance: late.count == 1 ? late[0] : nil,
                    detail: "the live host\(late.count == 1 ? " that runs it" : "s that run \(late.count) of the instances") did not answer "
                        + "the \(verb.rawValue) request within \(timeout)" + (late.count > 1 ? ": \(late.prefix(5).joined(separator: ", "))" : ""),
                    recovery: "The request stays recorded: that host applies it when it gets to it, or the instance's next host does "
                        + "(`wfctl describe` shows it pending); a paused host waits up to 30 s for its task attempts")
            }
            pause = min(pause * 2, .milliseconds(100))
            return false
        }

        func answers(in ids: [String]) -> [ControlAnswer] { ids.compactMap { answers[$0] } }
    }

    // MARK: Without blocking a thread of the cooperative pool

    /// As ``cancel(id:reason:deadline:timeout:)``, suspending the calling task while it waits.
    @discardableResult
    public func cancel(id: String, reason: String? = nil, deadline: Duration? = .seconds(60), timeout: Duration = .seconds(10)) async throws
        -> ControlAnswer {
        try await control(.cancel, id: id, reason: reason, deadline: deadline, timeout: timeout)
    }

    /// As ``terminate(id:reason:timeout:)``, suspending the calling task while it waits.
    @discardableResult
    public func terminate(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) async throws -> ControlAnswer {
        try await control(.terminate, id: id, reason: reason, timeout: timeout)
    }

    /// As ``pause(id:reason:timeout:)``, suspending the calling task while it waits.
    @discardableResult
    public func pause(id: String, reason: String? = nil, timeout: Duration = .seconds(40)) async throws -> ControlAnswer {
        try await control(.pause, id: id, reason: reason, timeout: timeout)
    }

    /// As ``unpause(id:reason:timeout:)``, suspending the calling task while it waits.
    @discardableResult
    public func unpause(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) async throws -> ControlAnswer {
        try await control(.unpause, id: id, reason: reason, timeout: timeout)
    }

    /// As ``delete(id:timeout:)``, suspending the calling task while it waits.
    @discardableResult
    public func delete(id: String, timeout: Duration) async throws -> ControlAnswer {
        try await control(.delete, id: id, timeout: timeout)
    }

    /// As ``control(_:id:reason:deadline:timeout:)``, suspending the calling task while it waits.
    public func control(
        _ verb: ControlVerb, id: String, reason: String? = nil, deadline: Duration? = nil, timeout: Duration = .seconds(10)
    ) async throws -> ControlAnswer {
        let answers = try await control(verb, ids: [id], reason: reason, deadline: deadline, timeout: timeout)
        if let answer = answers.first { return answer }
        throw notFound(id)
    }

    /// The control requests of instance `id` the store keeps (answered or pending), by number.
    public func controlRequests(of id: String) throws -> [StoredControlRequest] {
        try storageCall(instance: id) { () throws(StorageFailure) in try backend.controlRequests(of: id) }
    }

    // MARK: Helpers

    /// The answer a verb gets at once, without being recorded, from the instance's status: an
    /// ended instance takes no control request but a delete.
    private static func refusal(of verb: ControlVerb, for record: StoredInstance) -> (outcome: ControlAnswer.Outcome, detail: String)? {
        guard verb != .delete else { return nil }
        if record.status.hasEnded { return (.refused, "the instance has ended: it is \(record.status.rawValue)") }
        if record.status == .failed, verb == .pause || verb == .unpause {
            return (.refused, "the instance is failed, not running: resume it once its cause is fixed, or cancel it")
        }
        return nil
    }

    /// The answer to request `number` of `id`, as stored, once it has one.
    fileprivate func answer(of id: String, number: UInt64, verb: ControlVerb) throws -> ControlAnswer? {
        let requests = try storageCall(instance: id) { () throws(StorageFailure) in try backend.controlRequests(of: id) }
        guard let stored = requests.first(where: { $0.number == number }), let answer = stored.answer else { return nil }
        return ControlAnswer(instance: id, request: number, verb: verb, outcome: answer.outcome, sequence: answer.sequence,
                             detail: answer.detail, answeredBy: answer.answeredBy)
    }

    /// Whether a live host holds instance `id` (of this process, another process, another
    /// machine: on PostgreSQL by its lease): the host a control request reaches.
    public func isHeldByLiveHost(_ id: String) throws -> Bool {
        guard let record = try record(id: id) else { throw notFound(id) }
        return try holderIsAlive(record)
    }

    /// Whether a live host holds `record` (this process's, another process's, another machine's).
    func holderIsAlive(_ record: StoredInstance) throws -> Bool {
        if record.claim.isNone { return false }
        if let known = try storageCall(instance: record.id, { () throws(StorageFailure) in try backend.holderIsAlive(record) }) {
            return known
        }
        return record.claim.isAlive
    }

    /// Applies the pending requests of instance `id` up to `number` here, in order, as its host
    /// would, because no live host runs it: claimed for the time of one commit, each logged as its
    /// control entry (a cancel ends it at once: no workflow runs to clean up), then answered.
    /// Does nothing when a live host took the instance meanwhile (it applies them).
    fileprivate func applyWithoutHost(_ id: String, through number: UInt64) throws {
        let claimed: StoredInstance
        do {
            claimed = try claimOwnership(of: id, logger: logger)
        } catch let error as DurableError where error.kind == .instanceInUse {
            return
        } catch let error as DurableError where error.kind == .instanceNotFound {
            return
        }
        var released = false
        defer { if !released { releaseOwnership(of: id, owner: claimed.claim) } }
        let requests = try storageCall(instance: id) { () throws(StorageFailure) in try backend.controlRequests(of: id) }
            .filter { $0.answer == nil && $0.number <= number }
        var lastApplied = try lastControlRequest(of: claimed)
        var status = claimed.status, sequence = claimed.lastSequence
        var entries: [LogEntry] = []
        var outcomes: [(UInt64, ControlOutcome)] = []
        var deletion: UInt64?
        let root = NodePath(segments: [.init(workflowType: claimed.workflowType, key: "")])
        let now = WallTime.now()
        for request in requests {
            if request.number <= lastApplied {
                outcomes.append((request.number, .alreadyApplied))
                continue
            }
            let effect: ControlEntryEffect
            switch request.request.verb {
            case .delete:
                deletion = request.number
                outcomes.append((request.number, .applied(sequence: sequence)))
                lastApplied = request.number
                continue
            case _ where status.hasEnded:
                outcomes.append((request.number, .refused("the instance has ended: it is \(status.rawValue)")))
                continue
            case .cancel where status == .paused:
                outcomes.append((request.number, .refused("the instance is paused: unpause it to cancel it, or terminate it")))
                continue
            case .cancel:
                effect = .end(.cancelled(reason: request.request.reason ?? "no live host ran it: ended at once, without its workflow's cleanup"))
            case .terminate:
                effect = .end(.terminated(reason: request.request.reason))
            case .pause where status == .paused:
                outcomes.append((request.number, .unchanged("the instance is paused already")))
                continue
            case .pause:
                effect = .pause
            case .unpause where status != .paused:
                outcomes.append((request.number, .unchanged("the instance is not paused")))
                continue
            case .unpause:
                effect = .unpause
            }
            let entry = ControlEntry(request: request.number, effect: effect, reason: request.request.reason)
            sequence += 1
            entries.append(LogEntry(sequence: sequence, time: now, origin: .control, nodePath: root, actionTag: entry.tag, actionVersion: 1,
                                    payload: entry.payload, digest: nil))
            if let changed = entry.status { status = changed }
            lastApplied = request.number
            outcomes.append((request.number, .applied(sequence: sequence)))
        }
        if !entries.isEmpty {
            var records = LogRecords(firstSequence: entries[0].sequence, capacity: entries.count)
            for entry in entries { records.append(entry.encoded()) }
            var changes = InstanceChanges(id: id, key: claimed.key, claim: claimed.claim, entries: records, updated: now.nanosecondsSinceEpoch)
            if status != claimed.status { changes.status = status }
            let outcome = try storageCall(instance: id) { () throws(StorageFailure) in
                try backend.commit(CommitRequest(durability: .synced, changes: [changes]))
            }
            guard outcome.first == .committed else {
                // Another host took it between the claim and the commit: it applies them.
                return
            }
            logger.info("control requests were applied without a live host", metadata: [
                "instance": "\(id)", "entries": "\(entries.map(\.actionTag).joined(separator: ","))", "status": "\(status.rawValue)",
            ])
        }
        if let deletion {
            _ = try storageCall(instance: id) { () throws(StorageFailure) in try backend.delete(id: id) }
            released = true
            logger.info("an instance was deleted by a control request without a live host", metadata: ["instance": "\(id)", "request": "\(deletion)"])
        }
        let answeredBy = "\(ControlDispatcher.requester): no live host ran it"
        for (request, outcome) in outcomes {
            _ = try storageCall(instance: id) { () throws(StorageFailure) in
                try backend.answerControlRequest(instance: id, number: request, answer: ControlAnswerRecord(outcome: outcome, answeredBy: answeredBy))
            }
        }
    }

    /// What control requests did to instance `id`, as its log says (read without its workflow
    /// types): whether it is paused, the cancel request it is handling, the last request applied.
    public func controlState(of id: String) throws -> InstanceControlState {
        guard let record = try record(id: id) else { throw notFound(id) }
        let state = try controlState(of: record)
        // A cancellation the workflow finished (its final output ended the instance) is over.
        return InstanceControlState(paused: state.paused, cancellation: record.status.hasEnded ? nil : state.cancellation,
                                    lastRequest: state.lastRequest)
    }

    /// The control state of `record`'s tree at its last entry: its newest snapshot's, then the
    /// control entries after it.
    func controlState(of record: StoredInstance) throws -> ControlState {
        var from: UInt64 = 1, state = ControlState()
        var snapshot: Snapshot?
        try? backend.readSnapshots(of: record.key, atMost: record.lastSequence) { _, bytes in
            snapshot = Snapshot.decode(bytes)
            return snapshot == nil
        }
        if let snapshot {
            state = snapshot.control
            from = snapshot.sequence + 1
        }
        guard from <= record.lastSequence else { return state }
        try visitEntries(record: record, id: record.id, from: from, through: record.lastSequence) { entry in
            guard entry.isControl, let control = ControlEntry.decode(tag: entry.actionTag, payload: entry.payload) else { return }
            state.lastRequest = max(state.lastRequest, control.request)
            switch control.effect {
            case .pause: state.paused = true
            case .unpause: state.paused = false
            case .cancel(let request): state.cancellation = request
            case .end: state.cancellation = nil
            }
        }
        return state
    }

    /// The number of the last control request the log of `record` applied.
    func lastControlRequest(of record: StoredInstance) throws -> UInt64 {
        try controlState(of: record).lastRequest
    }

    /// The store's logger for what the control plane does outside a host (none by default).
    var logger: Logger { Logger(label: "workflow.control", factory: { _ in SwiftLogNoOpLogHandler() }) }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

extension ControlDispatcher {
    /// Who records requests from this process, in their records and answers.
    static var requester: String { "\(ProcessInfo.processInfo.processName) (\(processIdentity))" }
}
