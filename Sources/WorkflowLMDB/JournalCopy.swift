/// A checkpoint's copy of the journal: every entry's record, one after another, and what each is
/// (whose, which, when committed, where its record lies in the copy), to sort before the archive
/// is written.
///
/// A storage keeps one between checkpoints, emptied but as large as its largest (with 1,000
/// instances in flight and entries of about 100 bytes, some 20 MB): a copy allocated afresh for
/// every checkpoint has the kernel hand over and zero each of its pages again, which costs about
/// as much as reading the journal.
struct JournalCopy {
    /// A journal entry a checkpoint moves.
    struct Move {
        let instance: UInt64
        let sequence: UInt64
        /// The time of the commit that wrote it.
        let updated: Int64
        /// Where its record lies in ``records``.
        let start: Int
        let end: Int
    }

    private(set) var moves: [Move] = []
    private(set) var records: [UInt8] = []
    /// The last journal position copied, if any.
    private(set) var through: UInt64?
    /// The last write transaction committed when the copy was read, when it was read ahead of
    /// the checkpoint (in a read transaction).
    var snapshot: UInt64?

    /// Adds the journal entry `entry`, at `position`.
    mutating func add(_ entry: borrowing LMDBStorage.JournalEntry, at position: UInt64) {
        through = position
        let start = records.count
        records.append(contentsOf: entry.record)
        moves.append(Move(instance: entry.instance, sequence: entry.sequence, updated: entry.updated, start: start, end: records.count))
    }

    /// Sorts the moves by instance, then sequence (entries added after a sort are merged in).
    mutating func sort() {
        moves.sort { ($0.instance, $0.sequence) < ($1.instance, $1.sequence) }
    }

    /// Empties the copy, keeping its memory for the next.
    mutating func empty() {
        moves.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
        through = nil
        snapshot = nil
    }
}
