import LMDB
import Synchronization
import WorkflowStorage

extension LMDBStorage {
    /// How many instances a commit must carry for their entries to go to the journal: below it,
    /// each instance's entries go straight to its range of `log` (for one instance, a write to
    /// the end of its range costs no more than one to the journal's end, and is not copied later).
    package static let journalFanIn = 4
    /// The most entries of one instance in a commit that go to the journal, as many as a
    /// checkpoint is sized for per instance (``JournalCheckpoints/standard``): so that a commit adds
    /// at most about one checkpoint's worth of entries. Up to it, the journal is the cheaper
    /// place even for a batch that fills pages: an instance's range of `log` lies in the middle
    /// of the database (only the newest instance's is at its end), where each entry is a search
    /// and an insertion into a page, and a full page splits in half, while the journal's end
    /// takes appends (a checkpoint later copies them, in chunks, to the archive's end).
    package static let journalEntriesPerInstance = JournalCheckpoints.standard.entriesPerInstance

    /// How full the journal is, of `threshold` entries, when it is read ahead of its checkpoint:
    /// late enough that few entries are left for the checkpoint to add, early enough that the
    /// read (on another thread) is done before it.
    static func readAheadShare(of threshold: Int) -> Int {
        threshold - threshold / 8
    }

    /// Whether a commit that appended `appended` entries and left `held` in the journal, short of
    /// its checkpoint at `threshold`, has it read ahead: at ``readAheadShare(of:)``, or when a
    /// commit as large as this one would reach the checkpoint (commits of many entries each, as
    /// fire and forget makes, would otherwise jump past the share to the checkpoint, which would
    /// copy the whole journal in its transaction).
    static func readsAhead(held: Int, appended: Int, threshold: Int) -> Bool {
        held >= readAheadShare(of: threshold) || held + appended >= threshold
    }

    public func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        try commit(request, pullingMore: { nil })
    }

    /// Each part pulled is written into the open write transaction at once, while the caller
    /// gathers the next.
    public var writesPartsAsPulled: Bool { true }

    public func commit(_ request: CommitRequest, pullingMore more: () -> CommitRequest?) throws(StorageFailure) -> [CommitOutcome] {
        // The parts pulled so far: a transaction that runs again (after the map grew, or once
        // the signal tables are open) writes them again.
        var parts = [request]
        while true {
            let signals = parts.contains(where: \.hasDeliveryMarks) ? try signalLayout().layout : openSignalLayout
            let written = try call { () throws -> Written? in
                do {
                    return try environment.write { txn in try write(&parts, pullingMore: more, signals: signals, in: txn) }
                } catch is SignalTablesClosed {
                    return nil
                }
            }
            guard let written else { continue }
            // A read asked for the journal's tails since the last were published: these follow.
            let asked = tailsAsked.exchange(false, ordering: .relaxed)
            let snapshot = journalTails.withLock { tails in
                tails.confirm(written.transaction)
                return asked ? tails.snapshot : nil
            }
            if let snapshot { publish(snapshot) }
            stateCache.withLock { $0.confirm(written.transaction) }
            let readAhead = journalCopies.withLock { copies in
                copies.committed(written.transaction, checkpointed: written.checkpointed)
                return written.nearCheckpoint && copies.mayPrepare
            }
            if readAhead { readingAhead.async { [self] in readJournalAhead() } }
            return written.outcomes
        }
    }

    /// A part pulled into a transaction has delivery marks, and the signal tables are not open.
    private struct SignalTablesClosed: Error {}

    /// What a commit's transaction wrote: an outcome per change; the transaction's id; whether it
    /// checkpointed the journal, or left it near a checkpoint (worth reading ahead).
    private struct Written {
        var outcomes: [CommitOutcome] = []
        var transaction: UInt64 = 0
        var checkpointed = false
        var nearCheckpoint = false
    }

    /// Writes the parts pulled so far and pulls the rest through `more`.
    private func write(
        _ parts: inout [CommitRequest], pullingMore more: () -> CommitRequest?, signals: SignalLayout?, in txn: borrowing WriteTransaction
    ) throws -> Written {
        var written = Written()
        written.outcomes.reserveCapacity(parts.reduce(0) { $0 + $1.changes.count })
        var journal = JournalAppender(layout: layout)
        // Only write transactions, one at a time, use the journal's tails: this one holds them
        // while it runs.
        var tails = journalTails.take(leaving: JournalTails())
        defer { journalTails.withLock { $0 = tails } }
        tails.begin()
        var states = stateCache.take(leaving: StateCache())
        defer { stateCache.withLock { $0 = states } }
        states.begin(txn.id)
        var ids = knownIDs.take(leaving: InstanceKeyTable<String>())
        defer { knownIDs.withLock { $0 = ids } }
        var durability = parts[0].durability, instances = 0
        // One cursor on `state` and one on the journal serve every instance of the commit:
        // an instance's record is rewritten through the cursor that found it (LMDB then
        // finds the key on the cursor's page instead of searching from the root).
        try txn.withCursor(on: layout.state) { state in
            try txn.withCursor(on: layout.journal) { journalCursor in
                var index = 0
                while true {
                    if index == parts.count {
                        guard let part = more() else { break }
                        parts.append(part)
                        // The signal tables are opened outside a write transaction: this one
                        // ends, and runs again with them open.
                        if signals == nil, part.hasDeliveryMarks { throw SignalTablesClosed() }
                    }
                    let changesOfPart = parts[index].changes
                    durability = durability.strongest(with: parts[index].durability)
                    index += 1
                    instances += changesOfPart.count
                    let manyInstances = instances >= Self.journalFanIn
                    // By index: a `for` loop would copy each instance's changes (and retain all they hold).
                    for position in changesOfPart.indices {
                        let journaled = manyInstances && changesOfPart[position].entries.count <= Self.journalEntriesPerInstance
                        written.outcomes.append(try write(
                            changesOfPart[position], journaled: journaled, journal: &journal, journalCursor, state: state, signals: signals,
                            tails: &tails, states: &states, ids: &ids, in: txn))
                    }
                }
            }
        }
        var checkpointed = false
        if journal.appended > 0 {
            let held = try txn.count(of: layout.journal)
            if held + journal.appended >= Self.readAheadShare(of: checkpoints.entries) {
                journalEntriesRead.add(try tails.update(in: txn, journal: layout.journal), ordering: .relaxed)
                let threshold = checkpoints.threshold(instances: tails.instances)
                if held >= threshold {
                    try checkpoint(txn)
                    states.forgetWritten()
                    checkpointed = true
                } else {
                    written.nearCheckpoint = Self.readsAhead(held: held, appended: journal.appended, threshold: threshold)
                }
            }
        }
        written.checkpointed = checkpointed
        try tails.end(txn, journal: layout.journal, lastAppended: journal.lastEntry, checkpointed: checkpointed)
        written.transaction = txn.id
        txn.commitDurability = durability == .processCrashSafe ? .noSync : nil
        return written
    }

    /// Writes one instance's changes; a refusal is found before anything of them is written.
    /// (A transaction that grows the map runs again from the start, so this starts afresh.)
    /// The instance's record is read and rewritten through `state`, which nothing else moves
    /// meanwhile; the journal is appended to through `journalCursor`. An instance that had entries
    /// in the journal already, and whose changes only add entries, keeps its record as it is:
    /// its last journal entry says the rest (see the journal's invariants), as `tails` tells.
    private func write(
        _ changes: InstanceChanges, journaled: Bool, journal: inout JournalAppender,
        _ journalCursor: borrowing Cursor<UInt64, [UInt8], ReadWrite>, state: borrowing Cursor<UInt64, [UInt8], ReadWrite>,
        signals: SignalLayout?, tails: inout JournalTails, states: inout StateCache, ids: inout InstanceKeyTable<String>,
        in txn: borrowing WriteTransaction
    ) throws -> CommitOutcome {
        let key = changes.key
        guard try isInstance(id: changes.id, key: key, known: &ids, txn) else { return .refused(current: nil) }
        let cached = states.state(of: key)
        guard var stored = try cached ?? state.seek(exactly: key).flatMap({ IndexRecord.decodeState($0.value) }) else {
            return .refused(current: nil)
        }
        guard stored.claim == changes.claim else { return .refused(current: stored.claim) }
        let journaledBefore = stored.journaledFrom
        if journaledBefore > 0 {
            journalEntriesRead.add(try tails.update(in: txn, journal: layout.journal), ordering: .relaxed)
            // A cached record already says what the instance's last journal entry says.
            if cached == nil { stored.advance(to: tails[key]) }
        }
        if let signals {
            for mark in changes.deliveryMarks where try LMDBSignalStorage.isDelivered(mark, layout: signals, txn) {
                return .alreadyDelivered(consumer: mark.consumer, version: mark.version)
            }
        }
        let entries = changes.entries
        if !entries.isEmpty {
            guard entries.firstSequence == stored.lastSequence + 1 else {
                throw failure(.invalidInput, "commit",
                              "instance \(changes.id)'s entries start at \(entries.firstSequence), after \(stored.lastSequence)")
            }
            stored.lastSequence = entries.lastSequence
            stored.updated = changes.updated
            // An instance with entries in the journal keeps adding there, so that its entries in
            // `log` always come before those in the journal.
            if journaled || stored.journaledFrom > 0 {
                if stored.journaledFrom == 0 { stored.journaledFrom = entries.firstSequence }
                try journal.append(entries, of: key, updated: changes.updated, through: journalCursor)
                tails.appended(JournalTail(sequence: stored.lastSequence, updated: stored.updated), of: key)
            } else {
                try appendToLog(entries, of: key, txn)
            }
        }
        if let status = changes.status { stored.status = status }
        for snapshot in changes.snapshots {
            stored.lastSnapshot = max(stored.lastSnapshot, snapshot.sequence)
            try txn.put(snapshot.bytes, forKey: LogKey(instance: key, sequence: snapshot.sequence), in: layout.snapshots)
        }
        let recordChanges = journaledBefore == 0 || changes.status != nil || !changes.snapshots.isEmpty
        if recordChanges {
            // Through `state`: where it found the record (not cached), LMDB finds the key on the
            // cursor's page instead of searching from the root.
            try state.reserve(IndexRecord.stateSize, forKey: key) { IndexRecord.writeState(stored, into: $0) }
        }
        if let signals {
            for mark in changes.deliveryMarks { try LMDBSignalStorage.apply(mark, layout: signals, txn) }
        }
        states.wrote(stored, of: key)
        return .committed
    }

    /// Whether `key` is the key of instance `id`, from `known` (``knownIDs``, which the write
    /// transaction holds while it runs) or the store. Keys are never reused and an instance's id
    /// never changes: a known pair holds as long as the instance has a state record (deleting
    /// removes both).
    private func isInstance(id: String, key: UInt64, known: inout InstanceKeyTable<String>, _ txn: borrowing WriteTransaction) throws -> Bool {
        if known[key] == id { return true }
        guard let stored = try txn.value(forKey: id, in: layout.instances, { IndexRecord.decodeStatic($0, id: id)?.key }), stored == key else {
            return false
        }
        known[key] = id
        return true
    }

    /// Writes `entries` into the instance's range of `log` through one cursor: appended
    /// (`MDB_APPEND`: no search from the root, and a full last page is not split in half) while
    /// nothing follows them, as for the newest instance; else inserted.
    private func appendToLog(_ entries: LogRecords, of key: UInt64, _ txn: borrowing WriteTransaction) throws {
        try txn.withCursor(on: layout.log) { cursor in
            var atEnd = true
            try entries.forEach { sequence, bytes in
                var keyBytes = LogKey.bytes(instance: key, sequence: sequence)
                let space = try withUnsafeBytes(of: &keyBytes) { keyBytes throws(LMDBError) in
                    if atEnd, let space = try cursor.reserve(bytes.count, forKeyBytes: keyBytes, append: true) { return space }
                    atEnd = false
                    return try cursor.reserve(bytes.count, forKeyBytes: keyBytes, append: false)!
                }
                space.copyMemory(from: bytes)
            }
        }
    }

    // MARK: Reads

    public func readEntries(
        of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard from <= through else { return }
        do {
            try environment.read { txn in
                // The entries in `log` (there or in its segments) come first, then (from `journaledFrom`
                // on) those in the journal.
                let journaledFrom = try txn.value(forKey: key, in: layout.state) { bytes in
                    IndexRecord.decodeState(bytes)?.journaledFrom
                } ?? 0
                let going = try visitLog(instance: key, from: from, through: through, txn, visit)
                if going, journaledFrom > 0, through >= journaledFrom {
                    try visitJournaled(instance: key, from: from, through: through, txn, visit)
                }
            }
        } catch let error as LMDBError {
            throw error.storageFailure
        }
    }

    public func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        do {
            try environment.read { txn in
                try txn.forEach(in: layout.snapshots, from: LogKey(instance: key, sequence: sequence), reverse: true) { keyBytes, value in
                    let snapshotKey = try LogKey(lmdbBytes: keyBytes)
                    guard snapshotKey.instance == key else { return false }
                    return try visit(snapshotKey.sequence, value)
                }
            }
        } catch let error as LMDBError {
            throw error.storageFailure
        }
    }

    public func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure) {
        let layout = self.layout
        try call {
            try environment.write { txn in
                guard let found = try indexed(id: id, writing: txn) else {
                    throw failure(.notFound, "put snapshot", "no instance has the id \(id)")
                }
                var stored = found.instance
                try txn.put(bytes, forKey: LogKey(instance: stored.key, sequence: sequence), in: layout.snapshots)
                stored.lastSnapshot = max(stored.lastSnapshot, sequence)
                try txn.put(IndexRecord.encodedState(stored, journaledFrom: found.journaledFrom), forKey: stored.key, in: layout.state)
            }
        }
    }
}

