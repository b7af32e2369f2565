import LMDB
import WorkflowStorage

/// An instance's last entry in the journal: its sequence, and the time of the commit that wrote it.
struct JournalTail: Equatable {
    var sequence: UInt64
    var updated: Int64
}

/// What one storage knows of the journal: each instance's last entry in it, as a committed write
/// transaction left them, so that a write transaction (a commit, or a release, status change or
/// snapshot of one instance) finds the last sequence of an instance with journal entries without
/// searching the journal (the instance's state record is not rewritten while it has some: see the
/// journal's invariants).
///
/// Commits keep it up to date with their own entries. Before a commit relies on it, it reads what
/// other writers (other storages of the store, other processes) appended since; the whole journal
/// when a checkpoint moved the entries it knew of, or when the transaction that last changed it
/// may not have committed. Only write transactions, which run one at a time, read or change it.
struct JournalTails {
    private var tails = InstanceKeyTable<JournalTail>()
    /// The write transaction whose journal this describes (0: none yet).
    private var transaction: UInt64 = 0
    /// Whether this holds what a transaction wrote before its commit was confirmed (``confirm(_:)``):
    /// the next transaction starts afresh, as that one may not have committed.
    private var unconfirmed = false
    /// The journal's last entry as described: its position, instance and sequence (`nil`: empty).
    private var last: (position: UInt64, instance: UInt64, sequence: UInt64)?
    /// Brought up to date within the transaction being written.
    private var current = false

    /// The instance's last journal entry, once ``update(in:journal:)`` ran in this transaction.
    subscript(instance: UInt64) -> JournalTail? { tails[instance] }
    /// How many instances have entries in the journal, once ``update(in:journal:)`` ran in this
    /// transaction.
    var instances: Int { tails.count }

    /// A new write transaction starts using this.
    mutating func begin() {
        current = false
        if unconfirmed {
            tails.removeAll()
            transaction = 0
            last = nil
            unconfirmed = false
        }
    }

    /// Brings this up to the journal `txn` sees, unless done already in this transaction; returns
    /// how many journal entries it read.
    @discardableResult
    mutating func update(in txn: borrowing WriteTransaction, journal: Database<UInt64, [UInt8]>) throws -> Int {
        guard !current else { return 0 }
        current = true
        let now = txn.id
        if transaction != 0, transaction == now - 1 { return 0 }
        // Entries appended by others since: read after the last entry known, when it still lies
        // where it did.
        if transaction != 0, transaction < now, let last {
            if try Self.holds(last, in: txn, journal: journal) {
                let read = try read(txn, journal: journal, after: last.position)
                transaction = now - 1
                return read
            }
        }
        tails.removeAll()
        last = nil
        let read = try read(txn, journal: journal, after: nil)
        transaction = now - 1
        return read
    }

    /// Reads the journal's entries after `position` (all when `nil`); returns how many.
    private mutating func read(_ txn: borrowing WriteTransaction, journal: Database<UInt64, [UInt8]>, after position: UInt64?) throws -> Int {
        var read = 0
        try txn.forEach(in: journal, from: position.map { $0 + 1 }) { key, value in
            read += 1
            let entry = try LMDBStorage.journaled(value)
            tails[entry.instance] = JournalTail(sequence: entry.sequence, updated: entry.updated)
            last = (try UInt64(lmdbBytes: key), entry.instance, entry.sequence)
            return true
        }
        return read
    }

    /// What this describes, for read transactions, once the transaction that last brought it up
    /// to date committed; `nil` before.
    var snapshot: JournalTailsSnapshot? {
        guard transaction != 0, !unconfirmed else { return nil }
        return JournalTailsSnapshot(tails: tails, transaction: transaction, last: last)
    }

    /// Whether the journal `txn` sees still holds `entry` where it lay: then no checkpoint emptied
    /// the journal since (each instance's sequence goes in the journal once, so the same instance
    /// and sequence there is the same entry), and only a delete of an instance whose record was
    /// damaged removed entries from it, those of an instance that is gone.
    static func holds(
        _ entry: (position: UInt64, instance: UInt64, sequence: UInt64), in txn: borrowing Transaction<some TransactionMode>,
        journal: Database<UInt64, [UInt8]>
    ) throws -> Bool {
        try txn.value(forKey: entry.position, in: journal) { value in
            let found = try LMDBStorage.journaled(value)
            return found.instance == entry.instance && found.sequence == entry.sequence
        } ?? false
    }

    /// The transaction appended `tail` for `instance`.
    mutating func appended(_ tail: JournalTail, of instance: UInt64) {
        tails[instance] = tail
        unconfirmed = true
    }

    /// The transaction's writes are done: it appended up to `lastAppended` (position, instance,
    /// sequence), or emptied the journal in a checkpoint.
    mutating func end(
        _ txn: borrowing WriteTransaction, journal: Database<UInt64, [UInt8]>,
        lastAppended: (position: UInt64, instance: UInt64, sequence: UInt64)?, checkpointed: Bool
    ) throws {
        if checkpointed {
            tails.removeAll()
            last = nil
        } else if let lastAppended {
            try update(in: txn, journal: journal)
            last = lastAppended
        } else {
            return
        }
        transaction = txn.id
        unconfirmed = true
    }

    /// Transaction `id` committed.
    mutating func confirm(_ id: UInt64) {
        if transaction == id { unconfirmed = false }
    }
}
