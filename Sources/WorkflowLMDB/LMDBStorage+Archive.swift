import LMDB
import WorkflowStorage

/// Where checkpoints put the journal's entries: the archive, one generation per checkpoint.
///
/// A checkpoint appends every entry it moves at the end of `archive`, keyed by (generation,
/// instance, sequence), in key order: each write lands at the end of the database, so its pages
/// are filled whole, lie side by side in the file, and no entry is looked up from the root. The
/// instance's range of `log` gets one record per generation in its place (a *segment*: the
/// generation and the last sequence, keyed by the first), so that `log` still lists every
/// instance's entries in sequence order, each either there or in a segment.
///
/// Inserting the same entries into the instances' ranges of `log` instead writes most of them in
/// the middle of a page shared with the next instance's range, which LMDB splits in half: the
/// pages stay about half full, every checkpoint rewrites about twice the bytes it moves, and its
/// pages lie all over the file.
extension LMDBStorage {
    /// The first byte of a segment record in `log`; an entry record starts with its format
    /// (`LogEntry` formats 1 and 2), which this never is.
    static let segmentMarker: UInt8 = 0xA5
    /// The bytes of a segment record: the marker, the generation, the last sequence.
    static let segmentSize = 17

    /// A segment record's generation and last sequence, or `nil` when `value` is an entry record.
    static func segment(_ value: UnsafeRawBufferPointer) -> (generation: UInt64, last: UInt64)? {
        guard value.count == segmentSize, value[0] == segmentMarker else { return nil }
        return (UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 1, as: UInt64.self)),
                UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 9, as: UInt64.self)))
    }

    /// The record of a segment of `generation` whose entries end at `last`.
    static func segmentRecord(generation: UInt64, last: UInt64) -> [UInt8] {
        [segmentMarker] + bigEndianBytes(generation) + bigEndianBytes(last)
    }

    /// The eight bytes of `value`, most significant first.
    private static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// The key in `meta` of how many segment records `log` holds (eight bytes, big-endian; none
    /// when absent).
    static let segmentCountKey = "segments"

    /// How many segment records `log` holds.
    package func segmentCount(_ txn: borrowing Transaction<some TransactionMode>) throws -> Int {
        try txn.value(forKey: Self.segmentCountKey, in: layout.meta) { bytes in
            bytes.count == 8 ? Int(bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) : 0
        } ?? 0
    }

    /// Adds `change` to how many segment records `log` holds.
    func addToSegmentCount(_ change: Int, _ txn: borrowing WriteTransaction) throws {
        guard change != 0 else { return }
        let count = UInt64(max(0, try segmentCount(txn) + change))
        try txn.put(Self.bigEndianBytes(count), forKey: Self.segmentCountKey, in: layout.meta)
    }

    /// The generation after the archive's last (the first is 1).
    func nextGeneration(_ txn: borrowing WriteTransaction) throws -> UInt64 {
        try txn.withCursor(on: layout.archive) { cursor in
            try cursor.last().map { try ArchiveKey(lmdbBytes: $0.key).generation + 1 } ?? 1
        }
    }

    /// Visits the instance's entries in `log` from `from` through `through`, in order, those of
    /// its segments read from the archive, until `visit` returns false; returns whether it went
    /// to the end.
    func visitLog(
        instance: UInt64, from: UInt64, through: UInt64, _ txn: borrowing Transaction<some TransactionMode>,
        _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        try txn.withCursor(on: layout.log) { log in
            try txn.withCursor(on: layout.archive) { archive in
                // A segment that starts before `from` may hold it.
                var entry = try log.seek(atMost: LogKey(instance: instance, sequence: from))
                if let current = entry {
                    let key = try LogKey(lmdbBytes: current.key)
                    let covers = key.instance == instance && (key.sequence == from || Self.segment(current.value).map { $0.last >= from } ?? false)
                    if !covers { entry = try log.seek(atLeast: LogKey(instance: instance, sequence: from)) }
                } else {
                    entry = try log.seek(atLeast: LogKey(instance: instance, sequence: from))
                }
                while let current = entry {
                    let key = try LogKey(lmdbBytes: current.key)
                    guard key.instance == instance, key.sequence <= through else { return true }
                    if let segment = Self.segment(current.value) {
                        let start = ArchiveKey(generation: segment.generation, instance: instance, sequence: max(key.sequence, from))
                        var archived = try archive.seek(atLeast: start)
                        while let stored = archived {
                            let archivedKey = try ArchiveKey(lmdbBytes: stored.key)
                            guard archivedKey.generation == segment.generation, archivedKey.instance == instance,
                                  archivedKey.sequence <= min(segment.last, through) else { break }
                            guard try visit(archivedKey.sequence, stored.value) else { return false }
                            archived = try archive.next()
                        }
                    } else {
                        guard try visit(key.sequence, current.value) else { return false }
                    }
                    entry = try log.next()
                }
                return true
            }
        }
    }

    /// Deletes the instance's range of `log` and the archived entries of its segments.
    func deleteLog(instance: UInt64, _ txn: borrowing WriteTransaction) throws {
        var segments = 0
        try txn.withCursor(on: layout.log) { log in
            try txn.withCursor(on: layout.archive) { archive in
                var entry = try log.seek(atLeast: LogKey(instance: instance, sequence: 0))
                while let current = entry, try current.key(as: LogKey.self).instance == instance {
                    if let segment = Self.segment(current.value) {
                        let first = try current.key(as: LogKey.self).sequence
                        var archived = try archive.seek(atLeast: ArchiveKey(generation: segment.generation, instance: instance, sequence: first))
                        while let stored = archived {
                            let key = try ArchiveKey(lmdbBytes: stored.key)
                            guard key.generation == segment.generation, key.instance == instance, key.sequence <= segment.last else { break }
                            try archive.deleteCurrent()
                            archived = try archive.current()
                        }
                        segments += 1
                    }
                    try log.deleteCurrent()
                    entry = try log.current()
                }
            }
        }
        try addToSegmentCount(-segments, txn)
    }
}

/// The key of an archived entry: the checkpoint's generation, the instance's key and the
/// sequence, each big-endian, so that a checkpoint's entries follow every earlier one's.
package struct ArchiveKey: LMDBCodable, Hashable {
    package let generation: UInt64
    package let instance: UInt64
    package let sequence: UInt64

    package init(generation: UInt64, instance: UInt64, sequence: UInt64) {
        self.generation = generation
        self.instance = instance
        self.sequence = sequence
    }

    /// The key's 24 bytes, as a value to take the bytes of (`withUnsafeBytes(of:)`).
    package static func bytes(generation: UInt64, instance: UInt64, sequence: UInt64) -> (UInt64, UInt64, UInt64) {
        (generation.bigEndian, instance.bigEndian, sequence.bigEndian)
    }

    package func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var bytes = Self.bytes(generation: generation, instance: instance, sequence: sequence)
        return try Swift.withUnsafeBytes(of: &bytes) { (raw) throws(E) -> R in try body(raw) }
    }

    package init(lmdbBytes: UnsafeRawBufferPointer) throws(LMDBDecodingError) {
        guard lmdbBytes.count == 24 else {
            throw LMDBDecodingError(type: "ArchiveKey", byteCount: lmdbBytes.count, reason: "expected 24 bytes")
        }
        generation = UInt64(bigEndian: lmdbBytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        instance = UInt64(bigEndian: lmdbBytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        sequence = UInt64(bigEndian: lmdbBytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
    }
}
