import LMDB
import WorkflowStorage

/// Where checkpoints put the journal's entries: the archive, one generation per checkpoint.
///
/// A checkpoint appends the entries it moves at the end of `archive`, keyed by (generation,
/// instance, sequence), in key order: each write lands at the end of the database, so its pages
/// are filled whole, lie side by side in the file, and no entry is looked up from the root. Since
/// store format 6 each value is a chunk of an instance's consecutive entries (``ArchiveChunk``),
/// keyed by the first one's sequence; format 5 stored one entry per value. The instance's range of
/// `log` gets one record per generation in its place (a *segment*: which kind of values, the
/// generation and the last sequence, keyed by the first), so that `log` still lists every
/// instance's entries in sequence order, each either there or in a segment. Since format 7 a chunk
/// holds each entry as its difference from the one before (``DeltaChunk``).
///
/// Inserting the same entries into the instances' ranges of `log` instead writes most of them in
/// the middle of a page shared with the next instance's range, which LMDB splits in half: the
/// pages stay about half full, every checkpoint rewrites about twice the bytes it moves, and its
/// pages lie all over the file.
extension LMDBStorage {
    /// The first byte of a segment record in `log` whose archived values are single entries
    /// (format 5); an entry record starts with its format (`LogEntry` formats 1 and 2), which
    /// neither marker is.
    static let entriesSegmentMarker: UInt8 = 0xA5
    /// The first byte of a segment record whose archived values are chunks (format 6).
    static let chunksSegmentMarker: UInt8 = 0xA6
    /// The first byte of a segment record whose archived values are chunks of differences
    /// (format 7, ``DeltaChunk``).
    static let deltaChunksSegmentMarker: UInt8 = 0xA7
    /// The bytes of a segment record: the marker, the generation, the last sequence.
    static let segmentSize = 17

    /// Where a segment's entries are: its generation, its last sequence (its first is the key's)
    /// and how the archive holds them.
    struct Segment {
        /// What each of a segment's values in the archive holds.
        enum Values {
            /// One entry record (format 5).
            case entries
            /// A chunk of entry records (format 6, ``ArchiveChunk``).
            case chunks
            /// A chunk of entries, each as its difference from the one before (format 7, ``DeltaChunk``).
            case deltaChunks
        }

        let generation: UInt64
        let last: UInt64
        let values: Values

        /// Whether each value holds a run of entries, keyed by the first one's sequence.
        var chunked: Bool { values != .entries }
    }

    /// The segment a record of `log` stands for, or `nil` when `value` is an entry record.
    static func segment(_ value: UnsafeRawBufferPointer) -> Segment? {
        guard value.count == segmentSize else { return nil }
        let values: Segment.Values
        switch value[0] {
        case entriesSegmentMarker: values = .entries
        case chunksSegmentMarker: values = .chunks
        case deltaChunksSegmentMarker: values = .deltaChunks
        default: return nil
        }
        return Segment(generation: UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 1, as: UInt64.self)),
                       last: UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 9, as: UInt64.self)),
                       values: values)
    }

    /// The record of a segment of `generation`, archived in chunks of differences, whose entries
    /// end at `last`.
    static func segmentRecord(generation: UInt64, last: UInt64) -> [UInt8] {
        [deltaChunksSegmentMarker] + bigEndianBytes(generation) + bigEndianBytes(last)
    }

    /// The eight bytes of `value`, most significant first.
    private static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// The key in `meta` of how many segment records `log` holds (eight bytes, big-endian; none
    /// when absent).
    static let segmentCountKey = "segments"
    /// The key in `meta` of how many entries the archive holds (eight bytes, big-endian; none
    /// when absent).
    static let archivedCountKey = "archived"

    /// How many segment records `log` holds.
    package func segmentCount(_ txn: borrowing Transaction<some TransactionMode>) throws -> Int {
        try count(Self.segmentCountKey, txn)
    }

    /// How many entries the archive holds.
    package func archivedEntryCount(_ txn: borrowing Transaction<some TransactionMode>) throws -> Int {
        try count(Self.archivedCountKey, txn)
    }

    /// Adds `segments` to how many segment records `log` holds and `entries` to how many entries
    /// the archive holds.
    func addToArchiveCounts(segments: Int, entries: Int, _ txn: borrowing WriteTransaction) throws {
        try add(segments, to: Self.segmentCountKey, txn)
        try add(entries, to: Self.archivedCountKey, txn)
    }

    /// The count `meta` holds under `key` (0 when absent).
    func count(_ key: String, _ txn: borrowing Transaction<some TransactionMode>) throws -> Int {
        try txn.value(forKey: key, in: layout.meta) { bytes in
            bytes.count == 8 ? Int(bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) : 0
        } ?? 0
    }

    /// Adds `change` to the count `meta` holds under `key` (no lower than 0).
    func add(_ change: Int, to key: String, _ txn: borrowing WriteTransaction) throws {
        guard change != 0 else { return }
        let count = UInt64(max(0, try count(key, txn) + change))
        try txn.put(Self.bigEndianBytes(count), forKey: key, in: layout.meta)
    }

    /// Format 5 stored one entry per archive value: the archive's count of entries is its count
    /// of values.
    static func countArchivedEntries(_ txn: borrowing WriteTransaction, _ layout: StoreLayout) throws {
        let entries = UInt64(try txn.count(of: layout.archive))
        guard entries > 0 else { return }
        try txn.put(bigEndianBytes(entries), forKey: archivedCountKey, in: layout.meta)
    }

    /// A segment whose last sequence comes before its first (`first`, its key's) is a damaged store.
    static func check(_ segment: Segment, first: UInt64, of instance: UInt64) throws(LMDBError) {
        guard segment.last < first else { return }
        throw LMDBError(kind: .corrupted, path: "", operation: "read the log",
                        detail: "instance \(instance)'s segment record at sequence \(first) ends at \(segment.last), before it starts",
                        recovery: "Restore the store from a copy")
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
                        try Self.check(segment, first: key.sequence, of: instance)
                        let range = max(key.sequence, from)...min(segment.last, through)
                        guard try visitArchive(segment, of: instance, first: key.sequence, range, archive, visit) else { return false }
                    } else {
                        guard try visit(key.sequence, current.value) else { return false }
                    }
                    entry = try log.next()
                }
                return true
            }
        }
    }

    /// Visits the entries in `range` of the segment of `instance` whose first entry is `first`,
    /// read through `archive`, until `visit` returns false; returns whether it went to the end.
    private func visitArchive(
        _ segment: Segment, of instance: UInt64, first: UInt64, _ range: ClosedRange<UInt64>,
        _ archive: borrowing Cursor<ArchiveKey, [UInt8], some TransactionMode>, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        let start = ArchiveKey(generation: segment.generation, instance: instance, sequence: range.lowerBound)
        var archived: RawEntry?
        // In chunks, the one that holds the range's first entry starts at or before it.
        if segment.chunked, range.lowerBound > first, let holding = try archive.seek(atMost: start),
           case let key = try ArchiveKey(lmdbBytes: holding.key),
           key.generation == segment.generation, key.instance == instance, key.sequence >= first {
            archived = holding
        } else {
            archived = try archive.seek(atLeast: start)
        }
        while let stored = archived {
            let key = try ArchiveKey(lmdbBytes: stored.key)
            guard key.generation == segment.generation, key.instance == instance, key.sequence <= range.upperBound else { break }
            if segment.chunked {
                var stopped = false, past = false
                let inRange = { (sequence: UInt64, record: UnsafeRawBufferPointer) throws -> Bool in
                    guard sequence >= range.lowerBound else { return true }
                    guard sequence <= range.upperBound else {
                        past = true
                        return false
                    }
                    stopped = try !visit(sequence, record)
                    return !stopped
                }
                if segment.values == .deltaChunks {
                    _ = try DeltaChunk.forEach(stored.value, first: key.sequence, inRange)
                } else {
                    _ = try ArchiveChunk.forEach(stored.value, first: key.sequence, inRange)
                }
                if stopped { return false }
                if past { break }
            } else {
                guard try visit(key.sequence, stored.value) else { return false }
            }
            archived = try archive.next()
        }
        return true
    }

    /// Deletes the instance's range of `log` and the archived entries of its segments.
    func deleteLog(instance: UInt64, _ txn: borrowing WriteTransaction) throws {
        var segments = 0, entries = 0
        try txn.withCursor(on: layout.log) { log in
            try txn.withCursor(on: layout.archive) { archive in
                var entry = try log.seek(atLeast: LogKey(instance: instance, sequence: 0))
                while let current = entry, try current.key(as: LogKey.self).instance == instance {
                    if let segment = Self.segment(current.value) {
                        let first = try current.key(as: LogKey.self).sequence
                        var archived = try archive.seek(atLeast: ArchiveKey(generation: segment.generation, instance: instance, sequence: first))
                        while let stored = archived {
                            let key = try ArchiveKey(lmdbBytes: stored.key)
                            // A generation holds one segment of each instance: all its values there are this one's.
                            guard key.generation == segment.generation, key.instance == instance else { break }
                            try archive.deleteCurrent()
                            archived = try archive.current()
                        }
                        segments += 1
                        // A damaged segment (ending before it starts) is deleted all the same.
                        entries += segment.last >= first ? Int(segment.last - first + 1) : 0
                    }
                    try log.deleteCurrent()
                    entry = try log.current()
                }
            }
        }
        try addToArchiveCounts(segments: -segments, entries: -entries, txn)
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
