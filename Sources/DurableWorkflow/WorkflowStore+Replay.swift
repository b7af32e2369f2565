import Logging
import Workflow
import WorkflowStorage

/// What a replay found besides the tree.
struct ReplaySummary {
    /// The state forms the log's digests were recorded under at its end.
    let forms: RecordedForms
    /// How many recorded digests it could not compare: recorded under a state form this build
    /// cannot take its state back to (a field removed, a form changed, a newer form).
    let uncheckedDigests: Int
    /// The workers the log says the tree declared after its last entry (`<path>#<key>` to start
    /// sequence), as the builds that wrote it recorded them: `nil` when the log does not tell
    /// (written before declarations were noted, and no snapshot at its end).
    let recordedWorkers: [String: Int]?
}

/// What a replay of one instance starts from and goes to.
struct ReplayPlan<W: DurableWorkflow> {
    let id: String
    let record: StoredInstance
    let root: W
    let rootProps: [UInt8]
    /// The sequence the initial tree represents (the snapshot's, or 1 for the first props entry).
    let baseSequence: UInt64
    /// The last sequence to replay.
    let target: UInt64
    let restorer: SnapshotRestorer?
    /// The caller's configuration with the instance's codec.
    let configuration: DurableConfiguration
    /// Entries already read with the snapshot (a resume's `StorageBackend.readTail`), from the
    /// one after it (from the props entry without one); the replay reads on after them.
    var prefetched: LogRecords? = nil
    /// The version markers the instance had fixed at `baseSequence` (the snapshot's, or those
    /// its first entry noted).
    var markers: [String: Int] = [:]
    /// The state forms its digests were recorded under at `baseSequence`.
    var recordedForms: [String: Int] = [:]

    /// How the instance names its nodes (its naming marker, ``InstanceNaming``).
    var pathNaming: NodePath.Naming { InstanceNaming.pathNaming(markers: markers) }

    /// What the instance's workers' idempotency keys begin with.
    var idempotencyPrefix: String { InstanceNaming.idempotencyPrefix(id: id, created: record.created, markers: markers) }

    /// The versions a tree replayed from this plan takes, when the build or the instance has
    /// any (`nil`: no marker declared or fixed, no code version).
    func makeVersions() -> InstanceVersions? {
        let declared = configuration.versionMarkers
        guard !declared.isEmpty || !markers.isEmpty || record.codeVersion != nil else { return nil }
        return InstanceVersions(codeVersion: record.codeVersion, declared: declared, markers: markers,
                                programmerErrors: configuration.host.programmerErrors)
    }
}

extension WorkflowStore {
    static let replayChunk: UInt64 = 8192

    /// Reads what a replay of `id` up to `through` (default: the end) needs.
    func replayPlan<W: DurableWorkflow>(
        id: String, as type: W.Type, through: UInt64?, useSnapshot: Bool, configuration: DurableConfiguration
    ) throws -> ReplayPlan<W> {
        guard let record = try record(id: id) else { throw notFound(id) }
        return try replayPlan(record: record, id: id, as: type, through: through, useSnapshot: useSnapshot, configuration: configuration)
    }

    /// Reads what a replay of `record` up to `through` (default: the end) needs, starting from
    /// `tail` (the newest snapshot and the entries after it, read at once) where it serves: a
    /// snapshot in it that is not the one to start from, or a tail that does not fit, is left
    /// and read as without one.
    func replayPlan<W: DurableWorkflow>(
        record: StoredInstance, id: String, as type: W.Type, through: UInt64?, useSnapshot: Bool,
        configuration: DurableConfiguration, tail: LogTail? = nil
    ) throws -> ReplayPlan<W> {
        guard record.workflowType == W.workflowName else {
            throw DurableError(.wrongWorkflowType, store: path, instance: id,
                               detail: "the instance runs \(record.workflowType), not \(W.workflowName)",
                               recovery: "Resume it as \(record.workflowType)")
        }
        let configuration = try configuration.resolvingCodec(for: record, store: path, instance: id)
        let target = through ?? record.lastSequence
        guard target >= 1, target <= record.lastSequence else {
            throw DurableError(.sequenceOutOfRange, store: path, instance: id, sequence: target,
                               detail: "the log holds sequences 1 to \(record.lastSequence)")
        }
        // Outputs waiting for acknowledgement are delivered again by replaying their entries: a
        // snapshot taken before they were acknowledged would skip them.
        let whole = configuration.outputDelivery == .untilAcknowledged
        var snapshot: Snapshot?, prefetched: LogRecords?
        if useSnapshot && record.lastSnapshot > 0 {
            if let stored = tail?.snapshot, stored.sequence <= target, let decoded = stored.bytes.withUnsafeBytes({ Snapshot.decode($0) }),
               !(whole && decoded.hasUnacknowledgedOutputs) {
                snapshot = decoded
                prefetched = tail?.entries
            } else {
                snapshot = try latestSnapshot(record: record, id: id, atMost: target, acknowledgedWhole: whole)
            }
        } else if let tail, tail.snapshot == nil {
            prefetched = tail.entries
        }
        if let entries = prefetched, entries.firstSequence != (snapshot?.sequence ?? 0) + 1 { prefetched = nil }
        let props: [UInt8]
        var markers: [String: Int] = [:]
        if let snapshot {
            props = snapshot.rootProps
            markers = snapshot.versionMarkers
        } else if let entries = prefetched, !entries.isEmpty,
                  let first = entries.record(1).withUnsafeBytes({ LogEntry.decode($0, sequence: 1) }), first.isProps {
            props = first.payload
            markers = first.notes.versionMarkers
        } else {
            guard let first = try readEntries(record: record, id: id, from: 1, through: 1).first, first.isProps else {
                throw corrupt(id, sequence: 1)
            }
            props = first.payload
            markers = first.notes.versionMarkers
        }
        guard let root = StateCoding.decode(W.self, from: props, codec: configuration.codec) else {
            throw DurableError(.undecodablePayload, store: path, instance: id, sequence: snapshot?.sequence ?? 1,
                               actionTag: LogEntry.propsTag, detail: "the root props do not decode as \(W.workflowName)",
                               recovery: "Decode with the codec and workflow type the instance was started with")
        }
        let plan = ReplayPlan(
            id: id, record: record, root: root, rootProps: props, baseSequence: snapshot?.sequence ?? 1, target: target,
            restorer: snapshot.map { SnapshotRestorer(snapshot: $0, codec: configuration.codec) }, configuration: configuration,
            prefetched: prefetched, markers: markers, recordedForms: snapshot?.stateVersions ?? [:])
        // A version the instance fixed and this build dropped: refused before anything replays.
        for (marker, version) in markers.sorted(by: { $0.key < $1.key }) {
            if let supported = configuration.versionMarkers[marker], !supported.contains(version) {
                throw unsupported(UnsupportedVersion(marker: marker, version: version, supported: supported), id: id,
                                  sequence: plan.baseSequence)
            }
        }
        return plan
    }

    /// The error of an instance that fixed a version marker at a version this build does not support.
    func unsupported(_ found: UnsupportedVersion, id: String, sequence: UInt64?) -> DurableError {
        DurableError(
            .unsupportedVersion, store: path, instance: id, sequence: sequence,
            detail: "the instance takes version \(found.version) of the version marker \"\(found.marker)\", "
                + "and this build supports \(found.supported.lowerBound)...\(found.supported.upperBound)",
            recovery: "Run it on a build that supports version \(found.version) (keep \(found.version) in "
                + "DurableConfiguration.versionMarkers[\"\(found.marker)\"] until no instance needs it: `wfctl versions` lists them)")
    }

    /// The newest readable snapshot of `record` at or before `sequence`; a corrupt one is skipped
    /// (snapshots only shorten replay: the log is the truth).
    /// With `acknowledgedWhole`, only a snapshot taken when every root output before it was acknowledged.
    private func latestSnapshot(record: StoredInstance, id: String, atMost sequence: UInt64, acknowledgedWhole: Bool) throws -> Snapshot? {
        var found: Snapshot?
        do {
            try backend.readSnapshots(of: record.key, atMost: sequence) { _, bytes in
                found = Snapshot.decode(bytes)
                if acknowledgedWhole, found?.hasUnacknowledgedOutputs == true { found = nil }
                return found == nil
            }
        } catch let failure as StorageFailure {
            throw DurableError.storage(failure, store: path, instance: id)
        }
        return found
    }

    /// `body` with a plan that starts from the latest snapshot when `useSnapshot`; when that
    /// snapshot does not fit this build (``SnapshotMismatch``), `body` again with a plan of the
    /// whole log (rule D11), and an error of that replay says what became of the snapshot.
    func withSnapshotFallback<R>(
        id: String, useSnapshot: Bool, logger: Logger, _ body: (_ useSnapshot: Bool) throws -> R
    ) throws -> R {
        guard useSnapshot else { return try body(false) }
        do {
            return try body(true)
        } catch let mismatch as SnapshotMismatch {
            logger.warning("a snapshot does not fit this build: the instance is replayed from its first entry", metadata: [
                "instance": "\(id)", "snapshot": "\(mismatch.sequence)", "cause": "\(mismatch)",
            ])
            do {
                return try body(false)
            } catch let error as DurableError {
                throw error.replacingSnapshot(mismatch)
            }
        }
    }

    /// Applies the plan's entries to the tree through `driver` with the instance's codec, checking
    /// recorded digests; `versions` (the tree's) learns the markers entries fixed. `finished`
    /// gets what the replay found: the state forms the log's digests were recorded under at its
    /// end (for a journal that goes on writing), and how many digests it could not compare.
    func replay<W: DurableWorkflow>(
        _ plan: ReplayPlan<W>, driver: any ReplayDriver, versions: InstanceVersions? = nil, finished: ((ReplaySummary) -> Void)? = nil
    ) throws where W.Rendering: Sendable, W.Output: Sendable {
        // The first render pass built the tree from the snapshot: a state that did not decode, or
        // one no node took, means the snapshot is not this build's tree (rule D11).
        if let mismatch = plan.restorer?.mismatch() { throw mismatch }
        if let found = versions?.unsupported { throw unsupported(found, id: plan.id, sequence: plan.baseSequence) }
        let configuration = plan.configuration
        let observers = configuration.observers, started = ContinuousClock.now
        for observer in observers { observer.replayWillStart(instance: plan.id, from: plan.baseSequence, to: plan.target) }
        if let snapshot = plan.restorer?.snapshot {
            driver.acknowledged(through: snapshot.acknowledgedThrough, sequence: snapshot.sequence)
            if !snapshot.control.isInitial { driver.restoreControl(snapshot.control) }
        }
        var next = plan.baseSequence + 1
        var decoders = DecoderCache(
            ownBytes: configuration.codec is BinaryPayloadCodec, digests: StateDigests(codec: configuration.codec, store: path, instance: plan.id),
            forms: RecordedForms(plan.recordedForms), versions: versions,
            workers: plan.restorer.map { $0.snapshot.workerStarts.mapValues { Int($0) } })
        var cache = LogEntry.DecodingCache()
        while next <= plan.target {
            // The entries read with the snapshot first, then chunks pulled from the store.
            let tail = plan.prefetched.flatMap { $0.firstSequence <= next && $0.lastSequence >= next ? $0 : nil }
            let last = min(tail?.lastSequence ?? (next + Self.replayChunk - 1), plan.target)
            do {
                if let tail {
                    try visitRecords(tail, id: plan.id, from: next, through: last, cache: &cache) { entry in
                        try apply(entry, plan: plan, driver: driver, configuration: configuration, decoders: &decoders)
                    }
                } else {
                    try visitEntries(record: plan.record, id: plan.id, from: next, through: last) { entry in
                        try apply(entry, plan: plan, driver: driver, configuration: configuration, decoders: &decoders)
                    }
                }
            } catch let divergence as DurableError where divergence.kind == .nonDeterministic {
                throw describingStateBefore(divergence, plan: plan)
            }
            for observer in observers { observer.replayProgress(instance: plan.id, sequence: last, target: plan.target) }
            next = last + 1
        }
        finished?(ReplaySummary(forms: decoders.forms, uncheckedDigests: decoders.unchecked, recordedWorkers: decoders.workers))
        let duration = ContinuousClock.now - started
        for observer in observers {
            observer.replayDidFinish(instance: plan.id, entries: plan.target - plan.baseSequence, duration: duration)
        }
    }

    /// The decoder of the last action tag and version replayed (entries in a row usually share
    /// them), and the digests of digest checks.
    private struct DecoderCache {
        var tag = ""
        var version = -1
        var decode: ActionRegistry.Decoder?
        /// Whether types that read their own bytes do (the codec is `BinaryPayloadCodec`).
        let ownBytes: Bool
        let digests: StateDigests
        /// The state forms the digests read so far were recorded under.
        var forms: RecordedForms
        /// The tree's versions, which learn the markers entries fixed.
        let versions: InstanceVersions?
        /// How many recorded digests could not be compared (a form that cannot be taken back).
        var unchecked = 0
        /// The workers the log says the tree declares so far (`nil`: not told yet).
        var workers: [String: Int]?

        mutating func decoder(for entry: LogEntry.View, in registry: ActionRegistry) -> ActionRegistry.Decoder? {
            if let decode, entry.actionVersion == version, entry.actionTag == tag { return decode }
            decode = registry.decoder(tag: entry.actionTag, version: entry.actionVersion, ownBytes: ownBytes)
            tag = entry.actionTag
            version = entry.actionVersion
            return decode
        }
    }

    /// Applies one entry, read in place, to the tree.
    private func apply<W: DurableWorkflow>(
        _ entry: LogEntry.View, plan: ReplayPlan<W>, driver: any ReplayDriver, configuration: DurableConfiguration,
        decoders: inout DecoderCache
    ) throws {
        if !entry.notes.isEmpty {
            // Decided while the entry was applied and rendered: known before replay applies it.
            decoders.versions?.learn(entry.notes.versionMarkers)
            decoders.forms.learn(entry.notes.stateVersions)
            if entry.notes.declaresAllWorkers {
                decoders.workers = entry.notes.declaredWorkers
            } else if !entry.notes.declaredWorkers.isEmpty, decoders.workers != nil {
                for (name, start) in entry.notes.declaredWorkers { decoders.workers![name] = start == 0 ? nil : start }
            }
        }
        if entry.isAcknowledgement {
            // Applies nothing: it says which root outputs a consumer no longer needs delivered.
            guard entry.payload.count == 8 else {
                throw failure(.corruptEntry, entry, plan.id, "an acknowledgement entry holds \(entry.payload.count) bytes, not 8")
            }
            let through = (0..<8).reduce(UInt64(0)) { $0 | UInt64(entry.payload[$1]) << (8 * $1) }  // little-endian
            driver.acknowledged(through: through, sequence: entry.sequence)
            return
        }
        do {
            if entry.isProps {
                try applyProps(entry, plan: plan, driver: driver, configuration: configuration)
            } else if entry.isControl {
                // A control request (rule O2): in the engine's own form, whatever the codec.
                guard let control = ControlEntry.decode(tag: entry.actionTag, payload: entry.payload) else {
                    throw failure(.corruptEntry, entry, plan.id, "a control entry's payload does not decode")
                }
                driver.control(control.effect, number: control.request, time: entry.time, sequence: entry.sequence)
            } else {
                guard let decoder = decoders.decoder(for: entry, in: configuration.actions) else {
                    throw failure(.unknownActionType, entry, plan.id,
                                  "no decoder is registered for action tag \(entry.actionTag) version \(entry.actionVersion)",
                                  recovery: "Register the action type (or a decoder for this version) in DurableConfiguration.actions")
                }
                let action: any DurableAction
                do {
                    action = try decoder(entry.payload, configuration.codec)
                } catch {
                    throw failure(.undecodablePayload, entry, plan.id, "the payload does not decode: \(error)",
                                  recovery: "Register a decoder for version \(entry.actionVersion) of \(entry.actionTag)")
                }
                func open<A: DurableAction>(_ action: A) throws(ReplayMismatch) {
                    try driver.apply(action, at: entry.nodePath, origin: entry.origin, time: entry.time, sequence: entry.sequence)
                }
                try open(action)
            }
        } catch let mismatch as ReplayMismatch {
            var detail = "replay could not apply the entry: \(mismatch)"
            if case .noNode(let path) = mismatch { detail += ": " + ReplayExplanation.missingNode(path, in: driver.tree) }
            throw failure(.replayMismatch, entry, plan.id, detail, recovery: ReplayExplanation.missingNodeRecovery)
        }
        if let found = decoders.versions?.unsupported { throw unsupported(found, id: plan.id, sequence: entry.sequence) }
        if configuration.checksRecordedDigests, let recorded = entry.digest {
            let actual: UInt64
            if decoders.forms.differ(in: driver.tree) {
                // Recorded under other state forms than this build's: compared in those forms.
                guard let digest = try decoders.digests.digest(of: driver.tree, recordedForms: decoders.forms.versions) else {
                    decoders.unchecked += 1
                    return
                }
                actual = digest
            } else {
                actual = try decoders.digests.digest(of: driver.tree)
            }
            if actual != recorded {
                let after = Self.stateText(at: entry.nodePath, in: driver.tree, codec: configuration.codec)
                let unordered = ReplayExplanation.holdsUnorderedCollection(at: entry.nodePath, in: driver.tree)
                var detail = "replay diverged: state digest \(hex(actual)) differs from the recorded \(hex(recorded)); "
                    + "the node's state after this entry, replayed here: \(after)"
                if let recordedWorkers = decoders.workers,
                   let declared = ReplayExplanation.declaredDifferently(recorded: recordedWorkers, now: InstanceJournal.declaredWorkers(of: driver.tree)) {
                    detail += "; " + declared
                }
                throw failure(.nonDeterministic, entry, plan.id, detail,
                              recovery: ReplayExplanation.divergenceRecovery(stateHoldsUnorderedCollection: unordered))
            }
        }
    }

    /// The state of the node at `path` as JSON text (or a note that there is none).
    static func stateText(at path: NodePath, in tree: any RuntimeTree, codec: any PayloadCodec) -> String {
        guard let state = tree.nodeStates().first(where: { $0.path == path })?.state else { return "(no node at \(path))" }
        guard let bytes = try? StateCoding.encode(state, codec: codec, what: path.description, store: "", instance: "") else {
            return "\(state)"
        }
        return BinaryPayloadCodec.jsonText(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }

    /// `divergence` with the state of its node before its entry, rebuilt by a second replay
    /// that checks no digest (the first one's read has ended). Best effort: on any failure the
    /// divergence is returned as it was.
    private func describingStateBefore<W: DurableWorkflow>(_ divergence: DurableError, plan: ReplayPlan<W>) -> DurableError
    where W.Rendering: Sendable, W.Output: Sendable {
        guard let sequence = divergence.sequence, sequence > 1, let path = divergence.nodePath,
              let before = try? stateTree(of: plan.id, as: W.self, through: sequence - 1, configuration: plan.configuration),
              let node = before.nodes.first(where: { $0.path.names(path) }) else { return divergence }
        return DurableError(
            divergence.kind, store: divergence.store, instance: divergence.instance, sequence: divergence.sequence,
            actionTag: divergence.actionTag, nodePath: divergence.nodePath,
            detail: divergence.detail + "; before it (sequence \(sequence - 1)): \(node.stateText)", recovery: divergence.recovery)
    }

    /// A props update (out of line: its `Optional<W>` would otherwise be looked up for every entry).
    @inline(never)
    private func applyProps<W: DurableWorkflow>(
        _ entry: LogEntry.View, plan: ReplayPlan<W>, driver: any ReplayDriver, configuration: DurableConfiguration
    ) throws {
        guard let props = StateCoding.decode(W.self, from: Array(entry.payload), codec: configuration.codec) else {
            throw failure(.undecodablePayload, entry, plan.id, "the props do not decode as \(W.workflowName)")
        }
        try driver.updateRoot(props: props, time: entry.time, sequence: entry.sequence)
    }

    private func failure(_ kind: DurableError.Kind, _ entry: LogEntry.View, _ id: String, _ detail: String, recovery: String = "") -> DurableError {
        DurableError(kind, store: path, instance: id, sequence: entry.sequence, actionTag: entry.actionTag,
                     nodePath: entry.nodePath.description, detail: detail, recovery: recovery)
    }
}

extension NodePath {
    /// Whether `description` describes this path (an entry's path is described readably; a tree
    /// of an instance started before issue 59 describes its own with the legacy naming).
    func names(_ description: String) -> Bool {
        self.description == description || NodePath(segments: segments).description == description
    }
}

func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}
