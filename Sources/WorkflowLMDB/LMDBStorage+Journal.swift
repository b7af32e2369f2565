import LMDB
import WorkflowStorage

/// The store-wide journal: a commit that carries many instances appends all their entries at the
/// end of one database, in commit order, so that it writes a few pages instead of a page in each
/// instance's range of `log`. A checkpoint later moves the journal's entries into `log` in one
/// transaction (many entries of each instance at once) and empties it. Each journal value is the
/// instance key and sequence (16 bytes, big-endian) followed by the entry record.
///
/// Invariant: every entry an instance has in `log` comes before every entry it has in the
/// journal, which start at its `journaledFrom` (0 when it has none there).
extension LMDBStorage {
    /// Appends entries to the journal's end within one write transaction.
    struct JournalAppender: ~Copyable {
        private let layout: StoreLayout
        /// The next position, once the journal's end was looked up (at the first append).
        private var next: UInt64?
        /// Entries appended so far.
        private(set) var appended = 0

        init(layout: StoreLayout) {
            self.layout = layout
        }

        /// Appends `entries` of `instance` through `cursor`, a cursor on the journal that
        /// only this appender moves within the transaction.
        mutating func append(_ entries: LogRecords, of instance: UInt64, through cursor: borrowing Cursor<UInt64, [UInt8], ReadWrite>) throws {
            let start = try next ?? cursor.last().map { try $0.key(as: UInt64.self) + 1 } ?? 1
            var position = start
            try entries.forEach { sequence, bytes in
                var key = position.bigEndian
                let space = try withUnsafeBytes(of: &key) { key throws(LMDBError) in
                    try cursor.reserve(16 + bytes.count, forKeyBytes: key, append: true)
                }
                guard let space else { preconditionFailure("journal position \(position) is not after the journal's last") }
                space.storeBytes(of: instance.bigEndian, toByteOffset: 0, as: UInt64.self)
                space.storeBytes(of: sequence.bigEndian, toByteOffset: 8, as: UInt64.self)
                UnsafeMutableRawBufferPointer(rebasing: space[16...]).copyMemory(from: bytes)
                position += 1
            }
            appended += Int(position - start)
            next = position
        }
    }

    /// The instance and sequence a journal value holds, and its entry record.
    static func journaled(_ value: UnsafeRawBufferPointer) throws -> (instance: UInt64, sequence: UInt64, record: UnsafeRawBufferPointer) {
        guard value.count >= 16 else {
            throw LMDBError(kind: .corrupted, path: "", operation: "read the journal", detail: "a journal value of \(value.count) bytes",
                            recovery: "Restore the store from a copy")
        }
        return (UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UnsafeRawBufferPointer(rebasing: value[16...]))
    }

    /// Visits the instance's journal entries from `from` through `through`, in order, until
    /// `visit` returns false.
    func visitJournaled(
        instance: UInt64, from: UInt64, through: UInt64, _ txn: borrowing Transaction<some TransactionMode>,
        _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try txn.forEach(in: layout.journal) { _, value in
            let entry = try Self.journaled(value)
            guard entry.instance == instance, entry.sequence >= from else { return true }
            guard entry.sequence <= through else { return false }
            return try visit(entry.sequence, entry.record)
        }
    }

    /// Deletes the instance's journal entries (the instance is being deleted).
    func deleteJournaled(instance: UInt64, _ txn: borrowing WriteTransaction) throws {
        try txn.withCursor(on: layout.journal) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                if try Self.journaled(current.value).instance == instance {
                    try cursor.deleteCurrent()
                    entry = try cursor.current()
                } else {
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Moves every journal entry into `log` and empties the journal; the instances it held have
    /// no journal entries left. The entries go in key order (each instance's in sequence), so
    /// that most land on the page of `log` the cursor already stands on instead of being looked
    /// up from the root; those after the last key of `log` are appended.
    func checkpoint(_ txn: borrowing WriteTransaction) throws {
        // Copied out before `log` is written: the journal's values are read where they lie.
        var moves: [(key: LogKey, start: Int, end: Int)] = []
        var records: [UInt8] = []
        try txn.forEach(in: layout.journal) { _, value in
            let entry = try Self.journaled(value)
            let start = records.count
            records.append(contentsOf: entry.record)
            moves.append((LogKey(instance: entry.instance, sequence: entry.sequence), start, records.count))
            return true
        }
        moves.sort { ($0.key.instance, $0.key.sequence) < ($1.key.instance, $1.key.sequence) }
        var instances: [UInt64] = []
        try txn.withCursor(on: layout.log) { log in
            let last = try log.last().map { try LogKey(lmdbBytes: $0.key) }
            for move in moves {
                if instances.last != move.key.instance { instances.append(move.key.instance) }
                let append = last.map { (move.key.instance, move.key.sequence) > ($0.instance, $0.sequence) } ?? true
                var key = LogKey.bytes(instance: move.key.instance, sequence: move.key.sequence)
                let space = try withUnsafeBytes(of: &key) { key throws(LMDBError) in
                    try log.reserve(move.end - move.start, forKeyBytes: key, append: append)
                }
                guard let space else { preconditionFailure("log key \(move.key) is not after the log's last") }
                space.copyBytes(from: records[move.start..<move.end])
            }
        }
        try txn.removeAll(in: layout.journal)
        for instance in instances {
            guard let stored = try txn.value(forKey: instance, in: layout.state, { IndexRecord.withState(StoredInstance.placeholder, $0) }) else {
                continue
            }
            try txn.put(IndexRecord.encodedState(stored.instance, journaledFrom: 0), forKey: instance, in: layout.state)
        }
    }
}
