import LMDB
import WorkflowStorage

/// The key of a log entry or snapshot: the instance's numeric key, then the sequence, both
/// big-endian, so one instance's entries are contiguous and in order.
package struct LogKey: LMDBCodable, Hashable {
    package let instance: UInt64
    package let sequence: UInt64

    package func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var bytes = Self.bytes(instance: instance, sequence: sequence)
        return try Swift.withUnsafeBytes(of: &bytes) { (raw) throws(E) -> R in try body(raw) }
    }

    /// The key's 16 bytes, as a value to take the bytes of (`withUnsafeBytes(of:)`).
    package static func bytes(instance: UInt64, sequence: UInt64) -> (UInt64, UInt64) {
        (instance.bigEndian, sequence.bigEndian)
    }

    package init(instance: UInt64, sequence: UInt64) {
        self.instance = instance
        self.sequence = sequence
    }

    package init(lmdbBytes: UnsafeRawBufferPointer) throws(LMDBDecodingError) {
        guard lmdbBytes.count == 16 else {
            throw LMDBDecodingError(type: "LogKey", byteCount: lmdbBytes.count, reason: "expected 16 bytes")
        }
        instance = UInt64(bigEndian: lmdbBytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        sequence = UInt64(bigEndian: lmdbBytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }
}

/// The named databases of a store, opened once.
package struct StoreLayout: Sendable {
    /// `format`.
    package let meta: Database<String, [UInt8]>
    /// Instance id → the static part of its index record (see ``IndexRecord``).
    package let instances: Database<String, [UInt8]>
    /// Instance key → the mutable part of its index record: a small, dense database, so that a
    /// commit of many instances rewrites few pages of it.
    package let state: Database<UInt64, [UInt8]>
    /// (instance key, sequence) → entry record, or a segment record where a checkpoint put the
    /// entries from that sequence on in `archive`: every instance's entries, in order.
    package let log: Database<LogKey, [UInt8]>
    /// Position → (instance key, sequence, entry record): entries of commits that carried many
    /// instances, appended in commit order, until a checkpoint moves them into `archive`.
    package let journal: Database<UInt64, [UInt8]>
    /// (generation, instance key, sequence) → entry record: the entries each checkpoint moved,
    /// appended in key order (see `LMDBStorage+Archive.swift`).
    package let archive: Database<ArchiveKey, [UInt8]>
    /// (instance key, sequence) → encoded snapshot.
    package let snapshots: Database<LogKey, [UInt8]>
    /// (instance id, request number) → a control request and its answer (rule O2; format 10,
    /// see ``ControlRecord``).
    package let control: Database<[UInt8], [UInt8]>

    package init(environment: Environment) throws(LMDBError) {
        meta = try environment.database(named: "meta")
        instances = try environment.database(named: "instances")
        state = try environment.database(named: "state")
        log = try environment.database(named: "log")
        journal = try environment.database(named: "journal")
        archive = try environment.database(named: "archive")
        snapshots = try environment.database(named: "snapshots")
        control = try environment.database(named: "control")
    }
}
