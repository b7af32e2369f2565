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

    /// A new instance `newID` whose log is the first `sequence` entries of `id` (to reproduce an
    /// incident from the state it was in at that point).
    public func fork(id: String, at sequence: UInt64, as newID: String) throws {
        guard let record = try record(id: id) else { throw notFound(id) }
        guard sequence >= 1, sequence <= record.lastSequence else {
            throw DurableError(.sequenceOutOfRange, store: path, instance: id, sequence: sequence,
                               detail: "the log holds sequences 1 to \(record.lastSequence)")
        }
        let entries = try readEntries(record: record, id: id, from: 1, through: sequence)
        try importInstance(id: newID, workflowType: record.workflowType, status: .running, created: .now(), entries: entries,
                           codec: record.codec, codeVersion: record.codeVersion)
    }

    /// Writes a compact, consistent copy of the whole store (workflows and signals) into the
    /// directory `destination` (LMDB files never shrink in place).
    public func compactCopy(to destination: String) throws {
        try storageCall(instance: nil) { () throws(StorageFailure) in try backend.copy(to: destination) }
    }
}
