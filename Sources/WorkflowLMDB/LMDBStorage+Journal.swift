import LMDB
import Synchronization
import WorkflowStorage

/// The store-wide journal: a commit that carries many instances appends all their entries at the
/// end of one database, in commit order, so that it writes a few pages instead of a page in each
/// instance's range of `log`. A checkpoint later moves the journal's entries into the archive in
/// one transaction (many entries of each instance at once) and empties it. Each journal value is
/// the instance key, the sequence and the time of the commit that wrote it (8 bytes each,
/// big-endian) followed by the entry record.
///
/// Invariants: every entry an instance has in `log` (there or in a segment) comes before every
/// entry it has in the journal, which start at its `journaledFrom` (0 when it has none there). The
/// state record of an instance with entries in the journal is not rewritten by commits that only
/// add entries (which would cost each commit a page of `state` per few dozen instances): its last
/// sequence and update time are then those of its last journal entry (``JournalTail``) when that
/// is later; a checkpoint writes them into the record.
extension LMDBStorage {
    /// Appends entries to the journal's end within one write transaction.
    struct JournalAppender: ~Copyable {
        private let layout: StoreLayout
        /// The next position, once the journal's end was looked up (at the first append).
        private var next: UInt64?
        /// Entries appended so far.
        private(set) var appended = 0
        /// The last entry appended: its position, instance and sequence.
        private(set) var lastEntry: (position: UInt64, instance: UInt64, sequence: UInt64)?

        init(layout: StoreLayout) {
            self.layout = layout
        }

        /// Appends `entries` of `instance`, committed at `updated`, through `cursor`, a cursor on
        /// the journal that only this appender moves within the transaction.
        mutating func append(
            _ entries: LogRecords, of instance: UInt64, updated: Int64, through cursor: borrowing Cursor<UInt64, [UInt8], ReadWrite>
        ) throws {
            let start = try next ?? cursor.last().map { try $0.key(as: UInt64.self) + 1 } ?? 1
            var position = start
            let header = LMDBStorage.journalHeaderSize
            try entries.forEach { sequence, bytes in
                var key = position.bigEndian
                let space = try withUnsafeBytes(of: &key) { key throws(LMDBError) in
                    try cursor.reserve(header + bytes.count, forKeyBytes: key, append: true)
                }
                guard let space else { preconditionFailure("journal position \(position) is not after the journal's last") }
                space.storeBytes(of: instance.bigEndian, toByteOffset: 0, as: UInt64.self)
                space.storeBytes(of: sequence.bigEndian, toByteOffset: 8, as: UInt64.self)
                space.storeBytes(of: updated.bigEndian, toByteOffset: 16, as: Int64.self)
                UnsafeMutableRawBufferPointer(rebasing: space[header...]).copyMemory(from: bytes)
                lastEntry = (position, instance, sequence)
                position += 1
            }
            appended += Int(position - start)
            next = position
        }
    }

    /// The bytes before the entry record in a journal value: instance, sequence, commit time.
    static let journalHeaderSize = 24

    /// What a journal value holds.
    struct JournalEntry {
        let instance: UInt64
        let sequence: UInt64
        /// The time of the commit that wrote it (the instance's `updated` as of that commit).
        let updated: Int64
        let record: UnsafeRawBufferPointer
    }

    /// The instance, sequence and commit time a journal value holds, and its entry record.
    static func journaled(_ value: UnsafeRawBufferPointer) throws -> JournalEntry {
        guard value.count >= journalHeaderSize else {
            throw LMDBError(kind: .corrupted, path: "", operation: "read the journal", detail: "a journal value of \(value.count) bytes",
                            recovery: "Restore the store from a copy")
        }
        return JournalEntry(
            instance: UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
            sequence: UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            updated: Int64(bigEndian: value.loadUnaligned(fromByteOffset: 16, as: Int64.self)),
            record: UnsafeRawBufferPointer(rebasing: value[journalHeaderSize...]))
    }

    /// The instance's last entry in the journal, found from the journal's end (an instance that
    /// commits often has it near there); `nil` when it has none.
    func journalTail(of instance: UInt64, _ txn: borrowing Transaction<some TransactionMode>) throws -> JournalTail? {
        var tail: JournalTail?
        var read = 0
        defer { journalEntriesRead.add(read, ordering: .relaxed) }
        try txn.forEach(in: layout.journal, reverse: true) { _, value in
            read += 1
            let entry = try Self.journaled(value)
            guard entry.instance == instance else { return true }
            tail = JournalTail(sequence: entry.sequence, updated: entry.updated)
            return false
        }
        return tail
    }

    /// Every instance's last entry in the journal, in one pass.
    func lastJournalEntries(_ txn: borrowing Transaction<some TransactionMode>) throws -> [UInt64: JournalTail] {
        var tails: [UInt64: JournalTail] = [:]
        try txn.forEach(in: layout.journal) { _, value in
            let entry = try Self.journaled(value)
            tails[entry.instance] = JournalTail(sequence: entry.sequence, updated: entry.updated)
            return true
        }
        return tails
    }

    /// As ``updatedByJournal(_:_:)``, in a write transaction: the instance's last journal entry
    /// comes from this storage's ``journalTails``, brought up to date in `txn` (write transactions
    /// run one at a time, and only they use the tails), instead of a search of the journal from
    /// its end. Releasing or changing many instances whose last entries lie far back in the
    /// journal then reads it about once, not once per instance.
    func updatedByJournal(
        writing indexed: (instance: StoredInstance, journaledFrom: UInt64), _ txn: borrowing WriteTransaction
    ) throws -> (instance: StoredInstance, journaledFrom: UInt64) {
        guard indexed.journaledFrom > 0 else { return indexed }
        return (indexed.instance.advanced(to: try journalTail(writing: indexed.instance.key, txn)), indexed.journaledFrom)
    }

    /// The instance's last journal entry in a write transaction, from this storage's
    /// ``journalTails`` brought up to date in `txn`.
    private func journalTail(writing instance: UInt64, _ txn: borrowing WriteTransaction) throws -> JournalTail? {
        var tails = journalTails.take(leaving: JournalTails())
        defer { journalTails.withLock { $0 = tails } }
        tails.begin()
        journalEntriesRead.add(try tails.update(in: txn, journal: layout.journal), ordering: .relaxed)
        return tails[instance]
    }

    /// `indexed` (an instance and where its journal entries start) as the journal leaves it: the
    /// state record's last sequence and update time, or those of the instance's last journal
    /// entry where that is later.
    func updatedByJournal(
        _ indexed: (instance: StoredInstance, journaledFrom: UInt64), _ txn: borrowing Transaction<some TransactionMode>
    ) throws -> (instance: StoredInstance, journaledFrom: UInt64) {
        guard indexed.journaledFrom > 0 else { return indexed }
        return (indexed.instance.advanced(to: try publishedTail(of: indexed.instance.key, txn)), indexed.journaledFrom)
    }

    /// The instance's last entry in the journal `txn` sees, from ``publishedTails`` and the
    /// entries appended since; when they describe a journal that a checkpoint emptied since (or
    /// there are none yet), from a pass over the journal, whose tails are then published for the
    /// next reads; when they describe a newer journal than `txn` sees, from a search.
    private func publishedTail(of instance: UInt64, _ txn: borrowing Transaction<some TransactionMode>) throws -> JournalTail? {
        tailsAsked.store(true, ordering: .relaxed)
        let published = publishedTails.withLock { $0 }
        if let published {
            switch try published.tail(of: instance, in: txn, journal: layout.journal) {
            case .tail(let tail, let read):
                journalEntriesRead.add(read, ordering: .relaxed)
                return tail
            case .unknown:
                if published.transaction > txn.id { return try journalTail(of: instance, txn) }
            }
        }
        let (snapshot, read) = try JournalTailsSnapshot.read(in: txn, journal: layout.journal)
        journalEntriesRead.add(read, ordering: .relaxed)
        publish(snapshot)
        return snapshot.tails[instance]
    }

    /// Makes `snapshot` the tails that reads use, unless those describe a newer journal.
    func publish(_ snapshot: JournalTailsSnapshot) {
        publishedTails.withLock { published in
            if published.map({ $0.transaction < snapshot.transaction }) ?? true { published = snapshot }
        }
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

    /// The instance (being deleted, with journal entries from `journaledFrom` on and
    /// `lastSequence` as its state record says) leaves its journal entries where they are, for the
    /// next checkpoint to drop: they are counted in `meta` as left behind, so that the store's
    /// count of entries leaves them out at once. Deleting them now would read the whole journal.
    /// An instance's key is never handed out again (`nextInstanceKey`), so no later instance
    /// takes them for its own.
    func leaveJournaled(instance: UInt64, from journaledFrom: UInt64, lastSequence: UInt64, _ txn: borrowing WriteTransaction) throws {
        let last = max(lastSequence, try journalTail(writing: instance, txn)?.sequence ?? 0)
        guard last >= journaledFrom else { return }
        try addToLeftBehindCount(Int(last - journaledFrom + 1), txn)
    }

    /// The key in `meta` of how many journal entries deleted instances left behind (eight bytes,
    /// big-endian; none when absent).
    static let leftBehindCountKey = "leftInJournal"

    /// How many journal entries deleted instances left behind, for the next checkpoint to drop.
    package func leftBehindCount(_ txn: borrowing Transaction<some TransactionMode>) throws -> Int {
        try count(Self.leftBehindCountKey, txn)
    }

    func addToLeftBehindCount(_ change: Int, _ txn: borrowing WriteTransaction) throws {
        try add(change, to: Self.leftBehindCountKey, txn)
    }

    /// Deletes the instance's journal entries, reading the whole journal: for an instance being
    /// deleted whose record is damaged (so that its journal entries are not known).
    func deleteJournaled(instance: UInt64, _ txn: borrowing WriteTransaction) throws {
        var read = 0
        defer { journalEntriesRead.add(read, ordering: .relaxed) }
        try txn.withCursor(on: layout.journal) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                read += 1
                if try Self.journaled(current.value).instance == instance {
                    try cursor.deleteCurrent()
                    entry = try cursor.current()
                } else {
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Moves every journal entry into the archive, as a new generation, and empties the journal;
    /// the instances it held have no journal entries left, and those of deleted instances are
    /// dropped. Each instance's entries are appended in chunks (``DeltaChunk``) in key order, and
    /// its range of `log` gets a segment record in their place (see `LMDBStorage+Archive.swift`).
    func checkpoint(_ txn: borrowing WriteTransaction) throws {
        // Copied out before the archive is written: the journal's values are read where they lie.
        // A copy read ahead holds the journal up to its `through`: only later entries are added.
        var copy = journalCopies.withLock { $0.lend(to: txn.id) }
        defer {
            copy.empty()
            journalCopies.withLock { $0.giveBack(copy) }
        }
        try Self.copyJournal(after: copy.through, into: &copy, txn, layout)
        // An instance's journal entries come in sequence order: its last is the one it ends at.
        copy.sort()
        let generation = try nextGeneration(txn)
        // Each instance's entries: its first and last sequence, the last one's commit time.
        var segments: [(instance: UInt64, first: UInt64, last: JournalCopy.Move)] = []
        var chunk = DeltaChunk.Writer()
        var archived = 0
        try txn.withCursor(on: layout.archive) { archive in
            var next = 0
            while next < copy.moves.count {
                let first = copy.moves[next]
                // A deleted instance's entries (it has no state record) are dropped.
                if first.instance != segments.last?.instance, try !txn.contains(first.instance, in: layout.state) {
                    while next < copy.moves.count, copy.moves[next].instance == first.instance { next += 1 }
                    continue
                }
                chunk.empty()
                copy.records.withUnsafeBytes { records in
                    func record(_ move: JournalCopy.Move) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: records[move.start..<move.end]) }
                    for index in next..<copy.moves.count {
                        let previous = index > next ? record(copy.moves[index - 1]) : UnsafeRawBufferPointer(start: nil, count: 0)
                        guard copy.moves[index].instance == first.instance, chunk.add(record(copy.moves[index]), previous: previous) else { break }
                    }
                }
                var key = ArchiveKey.bytes(generation: generation, instance: first.instance, sequence: first.sequence)
                try withUnsafeBytes(of: &key) { key throws(LMDBError) in
                    guard let space = try archive.reserve(chunk.count, forKeyBytes: key, append: true) else {
                        preconditionFailure("archive key \(generation), \(first.instance), \(first.sequence) is not after the archive's last")
                    }
                    chunk.withBytes { space.copyMemory(from: $0) }
                }
                next += chunk.entries
                archived += chunk.entries
                if segments.last?.instance == first.instance {
                    segments[segments.count - 1].last = copy.moves[next - 1]
                } else {
                    segments.append((first.instance, first.sequence, copy.moves[next - 1]))
                }
            }
        }
        for segment in segments {
            try txn.put(Self.segmentRecord(generation: generation, last: segment.last.sequence),
                        forKey: LogKey(instance: segment.instance, sequence: segment.first), in: layout.log)
        }
        try addToArchiveCounts(segments: segments.count, entries: archived, txn)
        try txn.removeAll(in: layout.journal)
        if try leftBehindCount(txn) > 0 { try txn.delete(Self.leftBehindCountKey, in: layout.meta) }
        // Each instance's record now says what its last journal entry said.
        for segment in segments {
            guard var state = try txn.value(forKey: segment.instance, in: layout.state, { IndexRecord.decodeState($0) }) else { continue }
            state.advance(to: JournalTail(sequence: segment.last.sequence, updated: segment.last.updated))
            state.journaledFrom = 0
            try txn.put(IndexRecord.encodedState(state), forKey: segment.instance, in: layout.state)
        }
    }

    /// Adds the journal's entries after position `after` (all when `nil`) to `copy`.
    static func copyJournal(
        after: UInt64?, into copy: inout JournalCopy, _ txn: borrowing Transaction<some TransactionMode>, _ layout: StoreLayout
    ) throws {
        try txn.forEach(in: layout.journal, from: after.map { $0 + 1 }) { key, value in
            copy.add(try journaled(value), at: try UInt64(lmdbBytes: key))
            return true
        }
    }

    /// Reads the journal ahead of the next checkpoint into this storage's copy, sorted, unless a
    /// copy is being or was read ahead already; the checkpoint then adds only the entries
    /// appended since, if only this storage's commits appended them (``JournalCopies``).
    package func readJournalAhead() {
        guard var copy = journalCopies.withLock({ $0.startPreparing() }) else { return }
        do {
            try environment.read { txn in
                try Self.copyJournal(after: nil, into: &copy, txn, layout)
                copy.snapshot = txn.id
            }
            copy.sort()
        } catch {
            // The checkpoint reads the journal itself.
            copy.empty()
        }
        journalCopies.withLock { $0.finishPreparing(copy) }
    }

    /// Returns once the journal reads ahead that commits started are done.
    package func awaitReadingAhead() {
        readingAhead.sync {}
    }

    /// How many checkpoints of this storage took a copy of the journal read ahead.
    package var checkpointsReadAhead: Int { journalCopies.withLock { $0.preparedTaken } }

    /// Format 3's journal values lacked the commit time (their header was instance and sequence):
    /// each gets its instance's update time, which format 3 rewrote in the state record with
    /// every commit.
    static func addCommitTimes(_ txn: borrowing WriteTransaction, _ layout: StoreLayout) throws {
        var rewritten: [(position: UInt64, value: [UInt8])] = []
        var updated: [UInt64: Int64] = [:]
        try txn.forEach(in: layout.journal) { key, value in
            guard value.count >= 16 else {
                throw LMDBError(kind: .corrupted, path: "", operation: "migrate the journal", detail: "a journal value of \(value.count) bytes",
                                recovery: "Restore the store from a copy")
            }
            let instance = UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            let time = try updated[instance] ?? txn.value(forKey: instance, in: layout.state) {
                IndexRecord.decodeState($0)?.updated
            } ?? 0
            updated[instance] = time
            var bytes = Array(value.prefix(16))
            withUnsafeBytes(of: time.bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: value[16...])
            rewritten.append((try UInt64(lmdbBytes: key), bytes))
            return true
        }
        for (position, value) in rewritten { try txn.put(value, forKey: position, in: layout.journal) }
    }
}

extension StoredInstance {
    /// This record with the last sequence and update time of `tail` when that entry is later.
    func advanced(to tail: JournalTail?) -> StoredInstance {
        guard let tail, tail.sequence > lastSequence else { return self }
        var copy = self
        copy.lastSequence = tail.sequence
        copy.updated = tail.updated
        return copy
    }
}
