import LMDB
import Workflow

extension WorkflowStore {
    /// Creates instance `id` with exactly `entries` as its log (sequences 1...n, in order): the
    /// import half of a lossless export/import. Snapshots are not imported (they are derived).
    /// `codec` names the codec the entries were written with (default: judged from the first
    /// entry, ``BinaryPayloadCodec`` or ``JSONPayloadCodec``).
    public func importInstance(
        id: String, workflowType: String, status: InstanceStatus, created: WallTime, entries: [LogEntry], codec: String? = nil
    ) throws {
        guard !entries.isEmpty, entries.enumerated().allSatisfy({ $0.element.sequence == UInt64($0.offset + 1) }) else {
            throw DurableError(.corruptEntry, store: path, instance: id, detail: "imported entries must be sequences 1...n in order")
        }
        let layout = self.layout, store = path
        try storageCall(instance: id) {
            try environment.write { txn in
                if try txn.contains(id, in: layout.instances) {
                    throw DurableError(.instanceExists, store: store, instance: id, detail: "an instance with this id already exists",
                                       recovery: "Delete it first, or import into another store")
                }
                let key = try txn.value(forKey: "nextInstanceKey", in: layout.meta) { try UInt64(lmdbBytes: $0) } ?? 1
                try txn.put(withUnsafeBytes(of: (key + 1).bigEndian) { Array($0) }, forKey: "nextInstanceKey", in: layout.meta)
                for entry in entries {
                    try txn.put(entry.encoded(), forKey: LogKey(instance: key, sequence: entry.sequence), in: layout.log)
                }
                let record = InstanceRecord(
                    key: key, workflowType: workflowType, status: status, created: created, updated: entries.last!.time,
                    lastSequence: entries.last!.sequence, lastSnapshot: 0,
                    codec: codec ?? BuiltInCodecs.name(ofPayload: entries[0].payload))
                try txn.put(record.encodedState(), forKey: record.stateKey, in: layout.log)
                try txn.put(record.encodedStatic(), forKey: id, in: layout.instances)
            }
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
                           codec: record.codec)
    }

    /// Writes a compact, consistent copy of the whole store (workflows and signals) into the
    /// directory `destination`: LMDB files never shrink in place.
    public func compactCopy(to destination: String) throws {
        try storageCall(instance: nil) { try environment.copy(to: destination, compact: true) }
    }
}
