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

        mutating func append(_ entries: LogRecords, of instance: UInt64, _ txn: borrowing WriteTransaction) throws {
            let start = try next ?? txn.withCursor(on: layout.journal) { cursor in
                try cursor.last().map { try $0.key(as: UInt64.self) + 1 } ?? 1
            }
            var position = start
            try txn.withCursor(on: layout.journal) { cursor in
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
    /// no journal entries left.
    func checkpoint(_ txn: borrowing WriteTransaction) throws {
        var instances = Set<UInt64>()
        try txn.withCursor(on: layout.log) { log in
            try txn.forEach(in: layout.journal) { _, value in
                let entry = try Self.journaled(value)
                instances.insert(entry.instance)
                var key = LogKey.bytes(instance: entry.instance, sequence: entry.sequence)
                let space = try withUnsafeBytes(of: &key) { key throws(LMDBError) in
                    if let space = try log.reserve(entry.record.count, forKeyBytes: key, append: true) { return space }
                    return try log.reserve(entry.record.count, forKeyBytes: key, append: false)!
                }
                space.copyMemory(from: entry.record)
                return true
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
