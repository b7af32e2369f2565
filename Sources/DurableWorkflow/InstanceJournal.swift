import Logging
import Tracing
import Workflow
import WorkflowStorage

/// The runtime's journal for one durable instance: turns applied actions into pending entries,
/// with digests and snapshots, on the thread running the host, and has its ``LogWriter`` commit
/// them through the store's pipeline as the mode says: before the host goes on (strict,
/// processCrashSafe), or in the background while the host goes on applying actions (group
/// commits, and a strict `sendAndWait` while the pipeline is committing for other instances).
final class InstanceJournal: RuntimeJournal {
    let store: WorkflowStore
    let instanceID: String
    private let configuration: DurableConfiguration
    @exclusivity(unchecked) private var pending = CommitBatch()
    /// Reminds the host of a held group commit that is due.
    private let timer = CommitTimer()
    /// The timer knows of the pending batch.
    @exclusivity(unchecked) private var pendingTimed = false
    private(set) var currentSequence: UInt64
    private let writer: LogWriter
    /// Each action type's encoder, found once.
    private let encoders: EncoderCache
    private let digests: StateDigests
    /// Where the actions' spans go (`nil`: no spans).
    private let tracer: (any Tracer)?
    /// The versions the host's tree takes: markers it decides live are logged with the entry
    /// being recorded.
    private let versions: InstanceVersions?
    /// The state forms the log's digests are recorded under (a resume's replay sets them).
    var recordedForms = RecordedForms()
    /// The tree structure whose state forms were last compared with `recordedForms`.
    @exclusivity(unchecked) private var formsCheckedAt: UInt64?
    /// The workers the log says the tree declares (`<path>#<key>` to start sequence): `nil`
    /// until this host's first render pass notes them all.
    @exclusivity(unchecked) private var loggedWorkers: [String: Int]?
    /// The tree's declarations when the workers were last compared with `loggedWorkers`.
    @exclusivity(unchecked) private var workersCheckedAt: UInt64 = 0
    /// Whether the host fails on a worker it cannot log (``unloggableWorker(_:workerType:key:node:refusal:)``).
    private var failedOnDeclaration = false
    /// The host's registration with the store's control dispatcher, while it takes requests.
    private var controlToken: UInt64?
    /// The delete request the host stops for: the instance is deleted as the host lets go of it.
    private var deletion: UInt64?

    let idempotencyPrefix: String
    let pathNaming: NodePath.Naming

    /// A journal for an instance whose `record` already carries this host's `owner` claim.
    init(
        store: WorkflowStore, instanceID: String, record: StoredInstance, configuration: DurableConfiguration,
        versions: InstanceVersions? = nil
    ) {
        self.store = store
        self.instanceID = instanceID
        self.configuration = configuration
        self.versions = versions
        self.currentSequence = record.lastSequence
        self.writer = LogWriter(store: store, instanceID: instanceID, record: record, configuration: configuration)
        self.digests = StateDigests(codec: configuration.codec, store: store.path, instance: instanceID)
        self.encoders = EncoderCache(codec: configuration.codec)
        self.tracer = configuration.activeTracer
        let markers = versions?.markers ?? [:]
        self.pathNaming = InstanceNaming.pathNaming(markers: markers)
        self.idempotencyPrefix = InstanceNaming.idempotencyPrefix(id: instanceID, created: record.created, markers: markers)
    }

    func admit(_ type: any WorkflowAction.Type) -> (any Error)? {
        configuration.refusal(of: type, store: store.path, instance: instanceID)
    }

    func record(action: any WorkflowAction, at path: NodePath, origin: ActionOrigin, time: WallTime) throws {
        try record(opened: action, at: path, origin: origin, time: time)
    }

    func attach(_ attachment: any Sendable) {
        guard let attachment = attachment as? any CommitAttachment else { return }
        pending.attachments.append(attachment)
        if let context = attachment.spanContext, let span = pending.spans.last {
            span.addLink(SpanLink(context: context, attributes: [:]))
        }
    }

    private func record<A: WorkflowAction>(opened action: A, at path: NodePath, origin: ActionOrigin, time: WallTime) throws {
        let found: EncoderCache.ActionEncoder?
        do {
            found = try encoders.actionEncoder(for: action)
        } catch {
            throw DurableError(
                .payloadMismatch, store: store.path, instance: instanceID, sequence: currentSequence + 1, nodePath: path.description,
                detail: error.description, recovery: BinaryPayloadMismatch.recovery)
        }
        guard let encoder = found else {
            throw DurableError(
                .actionNotDurable, store: store.path, instance: instanceID, sequence: currentSequence + 1, nodePath: path.description,
                detail: "\(A.self) was applied to a durable host but is not a DurableAction, so it cannot be logged",
                recovery: "Make the action Codable and conform it to DurableAction (and register it)")
        }
        if !configuration.writtenActionVersions.isEmpty, let written = configuration.writtenActionVersions[encoder.tag],
           written != encoder.version {
            return try record(action, writtenAs: written, tag: encoder.tag, at: path, origin: origin, time: time)
        }
        currentSequence += 1
        pending.append(action, encoder: encoder, at: path, sequence: currentSequence, origin: origin, time: time)
        if let tracer { pending.spans.append(actionSpan(tracer, tag: encoder.tag, path: path, origin: origin)) }
    }

    /// Records `action` in the form of an older `version` of its tag (the configuration still
    /// writes it), encoded now by the encoder registered for that version.
    @inline(never)
    private func record<A: WorkflowAction>(
        _ action: A, writtenAs version: Int, tag: String, at path: NodePath, origin: ActionOrigin, time: WallTime
    ) throws {
        guard let durable = action as? any DurableAction, let encode = configuration.actions.encoder(tag: tag, version: version) else {
            throw DurableError(.actionNotRegistered, store: store.path, instance: instanceID, sequence: currentSequence + 1, actionTag: tag,
                               detail: "no encoder is registered for version \(version) of \(tag), which the configuration writes")
        }
        let payload: [UInt8]
        do {
            payload = try encode(durable, configuration.codec)
        } catch {
            throw DurableError(.notCodable, store: store.path, instance: instanceID, sequence: currentSequence + 1, actionTag: tag,
                               nodePath: path.description, detail: "the action could not be encoded as version \(version): \(error)")
        }
        currentSequence += 1
        pending.append(payload: payload, tag: tag, version: version, at: path, sequence: currentSequence, origin: origin, time: time)
        if let tracer { pending.spans.append(actionSpan(tracer, tag: tag, path: path, origin: origin)) }
    }

    /// A span from an action's apply to its commit.
    @inline(never)
    private func actionSpan(_ tracer: any Tracer, tag: String, path: NodePath, origin: ActionOrigin) -> any Span {
        let span = tracer.startSpan("workflow.action", ofKind: .internal)
        span.attributes["workflow.instance"] = instanceID
        span.attributes["workflow.action"] = tag
        span.attributes["workflow.node"] = path.description
        span.attributes["workflow.origin"] = origin.rawValue
        span.attributes["workflow.sequence"] = Int(currentSequence)
        return span
    }

    func finish(asCancelled: Bool) {
        pending.status = asCancelled ? .cancelled : .completed
    }

    func record(control effect: ControlEntryEffect, number: UInt64, reason: String?, at path: NodePath, time: WallTime) throws {
        let entry = ControlEntry(request: number, effect: effect, reason: reason)
        currentSequence += 1
        pending.append(payload: entry.payload, tag: entry.tag, version: 1, at: path, sequence: currentSequence, origin: .control, time: time)
        if let status = entry.status { pending.status = status }
        configuration.logger.info("a control request was applied", metadata: [
            "instance": "\(instanceID)", "request": "\(number)", "entry": "\(entry.tag)", "sequence": "\(currentSequence)",
        ])
    }

    func answer(control number: UInt64, outcome: ControlOutcome) {
        store.controlDispatcher.answer(instance: instanceID, number: number, outcome: outcome)
    }

    func accept(controls receiver: any ControlReceiver) {
        guard !store.backend.isReadOnly else { return }
        controlToken = store.controlDispatcher.register(instanceID, receiver: receiver)
    }

    func deleteOnStop(request number: UInt64) {
        deletion = number
    }

    func record(acknowledgement sequence: UInt64, time: WallTime) throws {
        let payload = (0..<8).map { UInt8(truncatingIfNeeded: sequence >> (8 * $0)) }  // little-endian
        currentSequence += 1
        pending.append(payload: payload, tag: LogEntry.acknowledgementTag, version: 1, at: NodePath(segments: []),
                       sequence: currentSequence, origin: .acknowledgement, time: time)
    }

    func record(props: any Sendable, time: WallTime, tree: any RuntimeTree) throws {
        let rootProps = try StateCoding.encode(props, codec: configuration.codec, what: "root props", store: store.path, instance: instanceID)
        currentSequence += 1
        pending.append(
            payload: rootProps, tag: LogEntry.propsTag, version: 1, at: WorkflowStore.rootPath(ofProps: props),
            sequence: currentSequence, origin: .props, time: time)
    }

    func renderPassDidFinish(tree: any RuntimeTree, listener: any JournalListener, awaited: Bool) throws -> CommitProgress {
        if let versions { try noteVersions(versions) }
        if loggedWorkers == nil || tree.declarationVersion != workersCheckedAt { noteDeclaredWorkers(of: tree) }
        if case .every(let interval) = configuration.digests, interval > 0, currentSequence % UInt64(interval) == 0,
           !pending.entries.isEmpty {
            if tree.structureVersion != formsCheckedAt { noteStateForms(of: tree) }
            pending.setLastDigest(try digests.digest(of: tree))
        }
        if let every = configuration.snapshotEvery, every > 0, currentSequence % UInt64(every) == 0 {
            // The root's props as the tree holds them now (a resume may have replayed props updates).
            let props = try StateCoding.encode(tree.rootWorkflow(), codec: configuration.codec, what: "root props",
                                               store: store.path, instance: instanceID)
            pending.snapshots.append(try Snapshot.capture(
                sequence: currentSequence, rootProps: props, tree: tree, codec: configuration.codec,
                store: store.path, instance: instanceID, versionMarkers: versions?.markers ?? [:]))
        }
        switch configuration.mode {
        case .strict where awaited:
            // Committed when the runtime asks (`commitPending(.now)`), once nothing else is queued.
            return pending.isEmpty ? progressWithNothingPending : .held
        case .strict, .processCrashSafe:
            try commitHere()
            return .committed
        case .grouped(let maxBatch, _):
            if pending.entries.count >= maxBatch { return try handOff(listener: listener, backlog: Self.backlogBatches * maxBatch) }
            return pending.isEmpty ? progressWithNothingPending : .held
        }
    }

    /// Logs the markers the entry's apply and render pass decided with it; a marker the instance
    /// fixed at a version this build does not support stops the host before anything of the
    /// entry is committed.
    private func noteVersions(_ versions: InstanceVersions) throws {
        if let found = versions.unsupported {
            throw store.unsupported(found, id: instanceID, sequence: currentSequence)
        }
        let decided = versions.takeDecided()
        if !decided.isEmpty { pending.noteLast(EntryNotes(versionMarkers: decided)) }
    }

    /// Notes, with the entry being recorded, the workers its render pass began or stopped
    /// declaring (all of them at a host's first render pass), so the log says what each build
    /// declared (a replay gate's render diff).
    @inline(never)
    private func noteDeclaredWorkers(of tree: any RuntimeTree) {
        workersCheckedAt = tree.declarationVersion
        guard !pending.entries.isEmpty else { return }
        let declared = Self.declaredWorkers(of: tree)
        if let logged = loggedWorkers {
            var changes: [String: Int] = [:]
            for (name, start) in declared where logged[name] != start { changes[name] = start }
            for name in logged.keys where declared[name] == nil { changes[name] = 0 }
            if !changes.isEmpty { pending.noteLast(EntryNotes(declaredWorkers: changes)) }
        } else {
            pending.noteLast(EntryNotes(declaredWorkers: declared, declaresAllWorkers: true))
        }
        loggedWorkers = declared
    }

    /// The workers `tree` declares, by `<path>#<key>`, with their start sequences.
    static func declaredWorkers(of tree: any RuntimeTree) -> [String: Int] {
        Dictionary(tree.workerStarts().map { (Snapshot.workerKey($0.path, $0.key), Int($0.sequence)) }) { first, _ in first }
    }

    /// Notes, with the entry about to get a digest, the state forms of the tree's workflows that
    /// differ from those its log's digests were recorded under (rule V2): from this entry on, its
    /// digests are of this build's forms.
    @inline(never)
    private func noteStateForms(of tree: any RuntimeTree) {
        formsCheckedAt = tree.structureVersion
        let changed = recordedForms.changes(in: tree)
        guard !changed.isEmpty else { return }
        recordedForms.learn(changed)
        pending.noteLast(EntryNotes(stateVersions: changed))
    }

    func commitPending(_ urgency: CommitUrgency, listener: any JournalListener) throws -> CommitProgress {
        if case .strict = configuration.mode, urgency == .now {
            // Someone awaits the commit. While the store's pipeline is committing for others, the
            // batch joins their next round and this thread goes on; else it commits here, at once.
            if pending.isEmpty { return progressWithNothingPending }
            if store.pipeline.isCommitting { return try handOff(listener: listener, backlog: Self.strictBacklog) }
            try commitHere()
            return .committed
        }
        guard case .grouped(let maxBatch, let delay) = configuration.mode, urgency != .wait else {
            try commitHere()
            return .committed
        }
        if pending.isEmpty { return progressWithNothingPending }
        if urgency == .whenDue, delay > .zero {
            if !pendingTimed {
                timer.hold(for: delay, listener: listener)
                pendingTimed = true
            }
            return .held
        }
        return try handOff(listener: listener, backlog: Self.backlogBatches * maxBatch)
    }

    func hostDidFail(_ error: any Error) {
        guard failedOnDeclaration, let error = error as? DurableError else { return }
        // Left running, the instance would fail again at every resume, and a service would
        // adopt it again and again: it waits, failed, for a build that registers the type.
        configuration.logger.error("an instance declares work whose results it cannot log, and is marked failed", metadata: [
            "instance": "\(instanceID)", "node": "\(error.nodePath ?? "")", "action": "\(error.actionTag ?? "")", "error": "\(error)",
        ])
        do {
            try store.setStatus(.failed, id: instanceID, failure: error)
            store.metrics.instancesFailed.increment()
        } catch {
            configuration.logger.error("a failed instance could not be marked failed", metadata: [
                "instance": "\(instanceID)", "error": "\(error)",
            ])
        }
    }

    func unloggableWorker(
        _ action: any WorkflowAction.Type, workerType: String, key: String, node: NodePath, refusal: (any Error)?
    ) -> any Error {
        let refused = refusal as? DurableError ?? configuration.refusal(of: action, store: store.path, instance: instanceID)
        let declared = (action as? any TaskEventAction.Type).map { _ in "a task" } ?? "the worker \(workerType) (key \"\(key)\")"
        failedOnDeclaration = true
        return DurableError(
            refused?.kind ?? .actionNotRegistered, store: store.path, instance: instanceID, sequence: currentSequence,
            actionTag: (action as? any DurableAction.Type)?.tag, nodePath: node.description,
            detail: "render declares \(declared) whose outputs become \(action) actions, which this configuration cannot log, "
                + "so every one would be discarded and the workflow would wait forever: \(refused?.detail ?? "the type is not admitted")",
            recovery: (refused?.recovery ?? "Register the action type in DurableConfiguration.actions")
                + "; the instance is marked failed: once the type is registered, resume it (`wfctl resume --failed`)")
    }

    func discarded(_ discard: DiscardedAction) {
        let metadata: Logger.Metadata = [
            "instance": "\(instanceID)", "node": "\(discard.node?.path.description ?? "-")", "action": "\(discard.actionType)",
            "origin": "\(discard.origin.rawValue)", "reason": "\(discard.reason.rawValue)",
        ]
        switch discard.reason {
        case .notLoggable:
            var metadata = metadata
            if let error = discard.error { metadata["error"] = "\(error)" }
            configuration.logger.error("an action was discarded: this configuration cannot log its type", metadata: metadata)
        case .hostStopped where discard.origin == .worker:
            // A task attempt's outcome, say: the attempt runs again after a resume.
            configuration.logger.warning("a worker's output came after its host stopped and was dropped; its work runs again after a resume",
                                         metadata: metadata)
        default:
            // Expected (rules R2, R5): a sink from an old rendering, an output of a worker a
            // render pass ended, a signal or timer the log will deliver again.
            configuration.logger.debug("an action was discarded", metadata: metadata)
        }
    }

    func hostDidStop() {
        timer.stop()
        pending.abandon()
        pending = CommitBatch()
        if let controlToken {
            store.controlDispatcher.unregister(instanceID, token: controlToken)
            self.controlToken = nil
        }
        if let deletion {
            // Deleted while this host still holds it: no other host can have claimed it meanwhile.
            self.deletion = nil
            do {
                _ = try store.storageCall(instance: instanceID) { () throws(StorageFailure) in try store.backend.delete(id: instanceID) }
                configuration.logger.info("an instance was deleted by a control request", metadata: [
                    "instance": "\(instanceID)", "request": "\(deletion)",
                ])
                store.controlDispatcher.answer(instance: instanceID, number: deletion, outcome: .applied(sequence: currentSequence))
            } catch {
                configuration.logger.error("an instance could not be deleted", metadata: ["instance": "\(instanceID)", "error": "\(error)"])
                store.controlDispatcher.answer(instance: instanceID, number: deletion, outcome: .refused("the delete failed: \(error)"))
            }
        }
        writer.close()
    }

    /// Where things stand when nothing is pending: committed, or committing while a batch handed
    /// off is still being written (its notice will come).
    private var progressWithNothingPending: CommitProgress {
        writer.committedThrough >= currentSequence ? .committed : .committing
    }

    /// How many full batches a grouped host may run ahead of the disk. A commit's two syncs take
    /// milliseconds here, in which the host records thousands of entries: with room for only 4
    /// batches it stopped for every sync and both threads sat idle half the time (the writer
    /// takes everything waiting into its next commit, so a longer backlog also means fewer,
    /// larger commits). 16 batches of the default 1,000 entries hold a few MB.
    static let backlogBatches = 16

    /// How many entries a strict host may have waiting for the pipeline (each waits for its own
    /// commit, so few ever do).
    static let strictBacklog = 1_000

    /// Hands the pending batch to the store's pipeline for a background commit, waiting while
    /// `backlog` entries of this instance already wait there.
    private func handOff(listener: any JournalListener, backlog: Int) throws -> CommitProgress {
        try writer.handOff(takePending(), listener: listener, backlog: backlog)
        return .committing
    }

    /// Commits everything recorded, on this thread.
    private func commitHere() throws {
        try writer.commitNow(takePending())
    }

    /// The pending batch, for the writer (which commits or abandons it); the next one is a
    /// settled batch the writer kept, emptied, or else a new one with room for as many entries (a
    /// steady stream fills batches alike), and the timer forgets it.
    private func takePending() -> CommitBatch {
        // Swapped out rather than copied: a copy retains each of the batch's arrays and objects.
        var batch = writer.takeSpare() ?? CommitBatch(capacity: pending.entries.count)
        swap(&batch, &pending)
        if pendingTimed {
            timer.release()
            pendingTimed = false
        }
        return batch
    }
}
