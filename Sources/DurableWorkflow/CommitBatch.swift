import WorkflowMemory
import Tracing
import Workflow

/// An entry recorded by the host and not yet committed. An action's payload is encoded when its
/// commit is written (on the committing thread for a group commit), so the host's thread only
/// records what was applied. An entry is plain data, copied without touching any object: what
/// its batch's entries share (the node path, the action's tag and encoding) is in the batch's
/// `targets`, and the action it logs is in the batch's arena (an encoded payload in `payloads`).
struct PendingEntry: Sendable {
    let sequence: UInt64
    let time: WallTime
    let origin: ActionOrigin
    /// The index of the entry's ``EntryTarget`` in its batch.
    let target: Int
    let content: Content
    var digest: UInt64?

    /// What the entry logs.
    enum Content: Sendable {
        /// An applied action, in the batch's arena.
        case action(ActionSlot)
        /// An already encoded payload (root props): its index in the batch's `payloads`.
        case encoded(Int)
    }

    /// The log entry, aimed at `target`, with `payload` and `notes`.
    func entry(target: EntryTarget, payload: [UInt8], notes: EntryNotes = EntryNotes()) -> LogEntry {
        LogEntry(
            sequence: sequence, time: time, origin: origin, nodePath: target.nodePath, actionTag: target.actionTag,
            actionVersion: target.actionVersion, payload: payload, digest: digest, notes: notes)
    }
}

/// The node an entry's action was applied to, and how that action type is logged. Consecutive
/// entries of a batch with the same target share one: the host's thread and the writer's would
/// otherwise retain and release the same path and tag objects for every entry, and the two
/// threads fight over a shared object's reference count.
struct EntryTarget: Sendable {
    let nodePath: NodePath
    let actionTag: String
    let actionVersion: Int
    /// `nil` for entries whose payload is already encoded.
    let encoding: (any ValueEncoding.Type)?
    /// The bytes naming the target in a log record, made once with the target: a batch keeps its
    /// targets when it is reused, so the committer copies them into each record as they are.
    let recordBytes: [UInt8]

    init(nodePath: NodePath, actionTag: String, actionVersion: Int, encoding: (any ValueEncoding.Type)?) {
        self.nodePath = nodePath
        self.actionTag = actionTag
        self.actionVersion = actionVersion
        self.encoding = encoding
        recordBytes = LogEntry.targetBytes(nodePath: nodePath, actionTag: actionTag, actionVersion: actionVersion)
    }
}

/// What one commit writes for an instance: its entries in order, the snapshots taken at them, and
/// the writes attached to them (signal delivery marks).
struct CommitBatch: Sendable {
    private(set) var entries: [PendingEntry] = []
    private(set) var targets: [EntryTarget] = []
    /// The applied actions, unboxed, read in place by the writer.
    private var actions: ActionArena
    /// The already encoded payloads (root props).
    private var payloads: [[UInt8]] = []
    var snapshots: [Snapshot] = []
    var attachments: [any CommitAttachment] = []
    /// The notes of the entries that have any, in sequence order (few batches have one).
    private(set) var notes: [(sequence: UInt64, notes: EntryNotes)] = []
    /// The status the batch's commit sets (`nil`: unchanged): its entry that finished the
    /// instance completes it (or cancels it, after a cancel request); a control entry pauses,
    /// unpauses or ends it.
    var status: InstanceStatus?
    /// The spans of the batch's actions (with a tracer), ended when the batch is committed.
    var spans: [any Span] = []
    /// The last target's path storage and action encoding, for the common case of `targetIndex`.
    private var lastSegments: UInt?
    private var lastEncoding: ObjectIdentifier?

    var isEmpty: Bool { entries.isEmpty }
    /// How many entries log an action (the others log root props).
    var actionCount: Int { entries.count - payloads.count }

    /// An empty batch with room for `capacity` entries.
    init(capacity: Int = 0) {
        entries.reserveCapacity(capacity)
        actions = ActionArena(expected: capacity)
    }

    /// Empties the batch for its instance's next one, keeping what it allocated (the entries'
    /// storage, its arena's first chunk) and its targets while they are few (an instance mostly
    /// logs the same action types at the same nodes, so its next entries find theirs made);
    /// returns `false`, changing nothing, when its arena is held by another copy of the batch
    /// too, or when it held more than ``reusedEntries`` entries (a host that keeps a large
    /// batch's storage between bursts would hold it for nothing). Run by the committer once the
    /// batch is settled (see ``LogWriter/recycle(_:)``).
    mutating func emptyForReuse() -> Bool {
        guard entries.capacity <= Self.reusedEntries, isKnownUniquelyReferenced(&actions) else { return false }
        actions.reset()
        entries.removeAll(keepingCapacity: true)
        if targets.count > Self.keptTargets {
            targets.removeAll(keepingCapacity: true)
            lastSegments = nil
            lastEncoding = nil
        }
        // Most batches have none of these: emptying an empty array still costs a call.
        if !payloads.isEmpty { payloads.removeAll(keepingCapacity: true) }
        if !snapshots.isEmpty { snapshots.removeAll(keepingCapacity: true) }
        if !attachments.isEmpty { attachments.removeAll(keepingCapacity: true) }
        if !notes.isEmpty { notes.removeAll() }
        if !spans.isEmpty { spans.removeAll(keepingCapacity: true) }
        status = nil
        return true
    }

    /// The most entries a batch kept for reuse has room for.
    static let reusedEntries = 64
    /// The most targets a reused batch keeps.
    static let keptTargets = 4

    /// Appends an applied action's entry.
    mutating func append<A: WorkflowAction>(
        _ action: A, encoder: EncoderCache.ActionEncoder, at path: NodePath, sequence: UInt64,
        origin: ActionOrigin, time: WallTime
    ) {
        let target = targetIndex(path: path, tag: encoder.tag, version: encoder.version, encoding: encoder.encoding)
        entries.append(PendingEntry(sequence: sequence, time: time, origin: origin, target: target, content: .action(actions.store(action))))
    }

    /// Appends an entry whose payload is already encoded.
    mutating func append(payload: [UInt8], tag: String, version: Int, at path: NodePath, sequence: UInt64, origin: ActionOrigin, time: WallTime) {
        let target = targetIndex(path: path, tag: tag, version: version, encoding: nil)
        entries.append(PendingEntry(
            sequence: sequence, time: time, origin: origin, target: target, content: .encoded(payloads.count)))
        payloads.append(payload)
    }

    /// Appends the payload of `entry` (one of this batch's), encoded with `codec` (and, for an
    /// action, its target's `encoding`), to `bytes`.
    func appendPayload(of entry: PendingEntry, encoding: (any ValueEncoding.Type)?, codec: any PayloadCodec, to bytes: inout [UInt8]) throws {
        switch entry.content {
        case .encoded(let index):
            bytes.append(contentsOf: payloads[index])
        case .action(let slot):
            // The entry's target was made with the encoding of the action's type.
            try actions.withUnsafeAddress(of: slot) { try encoding!.encode($0, codec: codec, into: &bytes) }
        }
    }

    /// Adds `added` to the notes of the last entry.
    mutating func noteLast(_ added: EntryNotes) {
        guard let sequence = entries.last?.sequence, !added.isEmpty else { return }
        if let last = notes.indices.last, notes[last].sequence == sequence {
            notes[last].notes = notes[last].notes.merging(added)
        } else {
            notes.append((sequence, added))
        }
    }

    /// Sets the digest of the last entry.
    mutating func setLastDigest(_ digest: UInt64) {
        entries[entries.count - 1].digest = digest
    }

    /// The attached writes will never be made.
    func abandonAttachments() {
        for attachment in attachments { attachment.didAbandon() }
    }

    /// Nothing of the batch will be written: its attachments and spans are told.
    func abandon() {
        abandonAttachments()
        for span in spans {
            span.setStatus(SpanStatus(code: .error, message: "not committed: the host stopped"))
            span.end()
        }
    }

    /// The batch is committed (`failure`: or not, for that reason): its actions' spans end.
    func endSpans(failure: (any Error)?) {
        for span in spans {
            if let failure { span.recordError(failure) }
            span.end()
        }
    }

    private mutating func targetIndex(path: NodePath, tag: String, version: Int, encoding: (any ValueEncoding.Type)?) -> Int {
        // The common case, decided without copying the last target out: the same action type
        // (its encoding fixes its tag and version) applied to the same node (whose path is the
        // very array the last target holds).
        let segments = path.segments.withUnsafeBufferPointer { $0.baseAddress.map { UInt(bitPattern: $0) } }
        if let encoding, let segments, ObjectIdentifier(encoding) == lastEncoding, segments == lastSegments {
            return targets.count - 1
        }
        if let last = targets.indices.last, targets[last].nodePath == path, targets[last].actionTag == tag,
           targets[last].actionVersion == version, Self.same(targets[last].encoding, encoding) {
            return last
        }
        targets.append(EntryTarget(nodePath: path, actionTag: tag, actionVersion: version, encoding: encoding))
        // Compared by address only while `targets` holds the array, so the address cannot be reused.
        lastSegments = segments
        lastEncoding = encoding.map { ObjectIdentifier($0) }
        return targets.count - 1
    }

    private static func same(_ a: (any ValueEncoding.Type)?, _ b: (any ValueEncoding.Type)?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): ObjectIdentifier(a) == ObjectIdentifier(b)
        default: false
        }
    }
}
