import Workflow
import WorkflowStorage

extension WorkflowStore {
    /// Creates instance `id` with exactly `entries` as its log (sequences 1...n, in order),
    /// started under `codeVersion`: the import half of a lossless export/import (``importLines(_:)``
    /// adds the snapshots). `codec` names the codec the entries were written with (default:
    /// judged from the first entry, `BinaryPayloadCodec` or `JSONPayloadCodec`).
    public func importInstance(
        id: String, workflowType: String, status: InstanceStatus, created: WallTime, entries: [LogEntry], codec: String? = nil,
        codeVersion: String? = nil
    ) throws {
        guard !entries.isEmpty, entries.enumerated().allSatisfy({ $0.element.sequence == UInt64($0.offset + 1) }) else {
            throw DurableError(.corruptEntry, store: path, instance: id, detail: "imported entries must be sequences 1...n in order")
        }
        var records = LogRecords(firstSequence: 1, capacity: entries.count)
        for entry in entries { records.append(entry.encoded()) }
        let created = try storageCall(instance: id) { () throws(StorageFailure) in
            try backend.create(NewInstance(
                id: id, workflowType: workflowType, codec: codec ?? BuiltInCodecs.name(ofPayload: entries[0].payload), status: status,
                created: created.nanosecondsSinceEpoch, claim: .none, entries: records, codeVersion: codeVersion))
        }
        guard created != nil else {
            throw DurableError(.instanceExists, store: path, instance: id, detail: "an instance with this id already exists",
                               recovery: "Delete it first, or import into another store")
        }
    }

    /// A new instance `newID` whose log is the first `sequence` entries of `id`: to reproduce an
    /// incident from the state it was in at that point, or to rerun it from a step with other
    /// input (`replacing` the entry at `sequence`). The copy is created **paused** (rule O3), in
    /// this store or in `target`, with a `$pause` entry that says where it came from: no service
    /// resumes it, and no task of it calls anything, until someone unpauses it on purpose
    /// (`wfctl unpause`). It is a new incarnation: its tasks' idempotency keys are its own.
    public func fork(
        id: String, at sequence: UInt64, as newID: String, into target: WorkflowStore? = nil, replacing replacement: ForkReplacement? = nil
    ) throws {
        guard let record = try record(id: id) else { throw notFound(id) }
        guard sequence >= 1, sequence <= record.lastSequence else {
            throw DurableError(.sequenceOutOfRange, store: path, instance: id, sequence: sequence,
                               detail: "the log holds sequences 1 to \(record.lastSequence)")
        }
        var entries = try readEntries(record: record, id: id, from: 1, through: sequence)
        if let replacement {
            let original = entries[entries.count - 1]
            guard !original.isProps, !original.isControl, !original.isAcknowledgement else {
                throw DurableError(.sequenceOutOfRange, store: path, instance: id, sequence: sequence,
                                   detail: "entry \(sequence) is \(original.actionTag), not an action: only an action's payload is replaced",
                                   recovery: "Fork at the sequence of an action")
            }
            let payload = try replacement.payload(for: original, codec: record.codec, store: path, instance: id)
            // Its digest was of the state the old payload made.
            entries[entries.count - 1] = LogEntry(
                sequence: original.sequence, time: original.time, origin: original.origin, nodePath: original.nodePath,
                actionTag: original.actionTag, actionVersion: original.actionVersion, payload: payload, digest: nil, notes: original.notes)
        }
        let reason = "fork of \(id) at sequence \(sequence) of \(record.lastSequence)" + (replacement == nil ? "" : ", its payload replaced")
        let pause = ControlEntry(request: 0, effect: .pause, reason: reason)
        let root = NodePath(segments: [.init(workflowType: record.workflowType, key: "")])
        let now = WallTime.now()
        entries.append(LogEntry(sequence: sequence + 1, time: now, origin: .control, nodePath: root, actionTag: pause.tag, actionVersion: 1,
                                payload: pause.payload, digest: nil))
        try (target ?? self).importInstance(id: newID, workflowType: record.workflowType, status: .paused, created: now, entries: entries,
                                            codec: record.codec, codeVersion: record.codeVersion)
    }

    /// Writes a compact, consistent copy of the whole store (workflows and signals) into the
    /// directory `destination` (LMDB files never shrink in place).
    public func compactCopy(to destination: String) throws {
        try storageCall(instance: nil) { () throws(StorageFailure) in try backend.copy(to: destination) }
    }
}

/// What replaces the payload of the entry a fork ends at (``WorkflowStore/fork(id:at:as:into:replacing:)``):
/// the step is run again, by replay of the fork, with other input.
public enum ForkReplacement: Sendable {
    /// The new payload, in the instance's own codec.
    case payload([UInt8])
    /// The entry's action as JSON, read by `actions` (the registry that decodes the entry's tag
    /// and version, with the JSON codec) and written in the instance's codec.
    case json(String, actions: ActionRegistry)

    func payload(for entry: LogEntry, codec name: String, store: String, instance: String) throws -> [UInt8] {
        switch self {
        case .payload(let bytes):
            return bytes
        case .json(let text, let actions):
            guard let decode = actions.decoder(tag: entry.actionTag, version: entry.actionVersion, ownBytes: false) else {
                throw DurableError(.unknownActionType, store: store, instance: instance, sequence: entry.sequence, actionTag: entry.actionTag,
                                   detail: "no decoder is registered for \(entry.actionTag) version \(entry.actionVersion) to read the new payload",
                                   recovery: "Register the instance's workflow type in the tool (with its actions)")
            }
            let action: any DurableAction
            do {
                action = try Array(text.utf8).withUnsafeBytes { try decode($0, JSONPayloadCodec()) }
            } catch {
                throw DurableError(.undecodablePayload, store: store, instance: instance, sequence: entry.sequence, actionTag: entry.actionTag,
                                   detail: "the new payload does not decode as \(entry.actionTag): \(error)")
            }
            guard let codec = BuiltInCodecs.codec(named: name) else {
                throw DurableError(.codecMismatch, store: store, instance: instance, detail: "the instance's codec \"\(name)\" is not a built-in one",
                                   recovery: "Replace the payload with its bytes in that codec")
            }
            func encode<A: DurableAction>(_ action: A) throws -> [UInt8] { try codec.encode(action) }
            return try encode(action)
        }
    }
}
