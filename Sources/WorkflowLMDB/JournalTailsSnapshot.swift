import LMDB

/// Each instance's last journal entry as one committed transaction left the journal, for read
/// transactions: a read of an instance with entries in the journal takes its last sequence from
/// here, and reads only the entries appended since, instead of searching the journal from its end
/// (an instance that stays idle while others commit has its last entry far back, up to a whole
/// checkpoint's worth of entries).
///
/// A storage keeps the newest it has (``LMDBStorage/publishedTails``): its commits publish theirs
/// while reads ask for them, and a read that finds none it can use makes one in a pass over the
/// journal it sees.
struct JournalTailsSnapshot {
    let tails: InstanceKeyTable<JournalTail>
    /// The committed transaction whose journal this describes.
    let transaction: UInt64
    /// The journal's last entry then: its position, instance and sequence (`nil`: empty).
    let last: (position: UInt64, instance: UInt64, sequence: UInt64)?

    /// What a snapshot says of one instance in a read transaction.
    enum Answer {
        /// The instance's last journal entry (`nil`: none), found after reading `read` entries.
        case tail(JournalTail?, read: Int)
        /// The transaction sees an older journal than this describes, or one that a checkpoint
        /// emptied since.
        case unknown
    }

    /// The last journal entry of `instance` in the journal `txn` sees: this snapshot's, or one
    /// appended since (read from after the last entry described).
    func tail(of instance: UInt64, in txn: borrowing Transaction<some TransactionMode>, journal: Database<UInt64, [UInt8]>) throws -> Answer {
        let seen = txn.id
        guard transaction <= seen else { return .unknown }
        var tail = tails[instance]
        guard transaction < seen else { return .tail(tail, read: 0) }
        if let last, try !JournalTails.holds(last, in: txn, journal: journal) { return .unknown }
        var read = 0
        try txn.forEach(in: journal, from: last.map { $0.position + 1 }) { _, value in
            read += 1
            let entry = try LMDBStorage.journaled(value)
            if entry.instance == instance { tail = JournalTail(sequence: entry.sequence, updated: entry.updated) }
            return true
        }
        return .tail(tail, read: read)
    }

    /// The snapshot of the journal `txn` sees, in one pass over it; and how many entries it read.
    static func read(in txn: borrowing Transaction<some TransactionMode>, journal: Database<UInt64, [UInt8]>) throws -> (JournalTailsSnapshot, read: Int) {
        var tails = InstanceKeyTable<JournalTail>()
        var last: (position: UInt64, instance: UInt64, sequence: UInt64)?
        var read = 0
        try txn.forEach(in: journal) { key, value in
            read += 1
            let entry = try LMDBStorage.journaled(value)
            tails[entry.instance] = JournalTail(sequence: entry.sequence, updated: entry.updated)
            last = (try UInt64(lmdbBytes: key), entry.instance, entry.sequence)
            return true
        }
        return (JournalTailsSnapshot(tails: tails, transaction: txn.id, last: last), read)
    }
}
