import LMDB
import WorkflowStorage

extension LMDBStorage {
    public func create(_ new: NewInstance) throws(StorageFailure) -> StoredInstance? {
        guard new.entries.firstSequence == 1, !new.entries.isEmpty else {
            throw failure(.invalidInput, "create", "a new instance's log starts at sequence 1 with at least one entry")
        }
        let layout = self.layout
        return try call {
            try environment.write { txn -> StoredInstance? in
                if try txn.contains(new.id, in: layout.instances) { return nil }
                let key = try txn.withValue(forKey: "nextInstanceKey", in: layout.meta) { try UInt64(lmdbBytes: $0) } ?? 1
                try txn.put(withUnsafeBytes(of: (key + 1).bigEndian) { Array($0) }, forKey: "nextInstanceKey", in: layout.meta)
                try new.entries.forEach { sequence, bytes in
                    try txn.put(Array(bytes), forKey: LogKey(instance: key, sequence: sequence), in: layout.log)
                }
                let stored = StoredInstance(
                    id: new.id, key: key, workflowType: new.workflowType, codec: new.codec, status: new.status, created: new.created,
                    updated: new.created, lastSequence: new.entries.lastSequence, lastSnapshot: 0, claim: new.claim,
                    codeVersion: new.codeVersion)
                try txn.put(IndexRecord.encodedState(stored, journaledFrom: 0), forKey: key, in: layout.state)
                try txn.put(IndexRecord.encodedStatic(stored), forKey: new.id, in: layout.instances)
                return stored
            }
        }
    }

    public func instance(id: String) throws(StorageFailure) -> StoredInstance? {
        try call { try environment.read { txn in try indexed(id: id, txn)?.instance } }
    }

    /// The instance with this id as `txn` sees it (its last sequence and update time as its
    /// journal entries leave them), and its first sequence in the journal (0 when none); a missing
    /// or unreadable part is `.corrupted`.
    func indexed(id: String, _ txn: borrowing Transaction<some TransactionMode>) throws -> (instance: StoredInstance, journaledFrom: UInt64)? {
        try storedRecord(id: id, txn).map { try updatedByJournal($0, txn) }
    }

    /// As ``indexed(id:_:)``, in a write transaction (see ``updatedByJournal(writing:_:)``).
    func indexed(id: String, writing txn: borrowing WriteTransaction) throws -> (instance: StoredInstance, journaledFrom: UInt64)? {
        try storedRecord(id: id, txn).map { try updatedByJournal(writing: $0, txn) }
    }

    /// As ``indexed(id:_:)``, with the last sequence and update time the instance's record holds
    /// (not yet those of its journal entries).
    private func storedRecord(
        id: String, _ txn: borrowing Transaction<some TransactionMode>
    ) throws -> (instance: StoredInstance, journaledFrom: UInt64)? {
        // An id longer than a key can be names no instance (an operator's typo, a URL's garbage).
        if id.utf8.count > environment.maxKeySize { return nil }
        guard let base = try txn.value(forKey: id, in: layout.instances, { IndexRecord.decodeStatic($0, id: id) }) else {
            if try txn.contains(id, in: layout.instances) { throw damagedRecord(id) }
            return nil
        }
        guard let indexed = try txn.value(forKey: base.key, in: layout.state, { IndexRecord.withState(base, $0) }) else {
            throw damagedRecord(id)
        }
        return indexed
    }

    func damagedRecord(_ id: String) -> StorageFailure {
        failure(.corrupted, "read the index", "the index record of instance \(id) is missing or corrupt",
                recovery: "Restore the store from a copy")
    }

    public func instances() throws(StorageFailure) -> [StoredInstance] {
        var found: [StoredInstance] = []
        try forEachInstance { found.append($0) }
        return found
    }

    /// Visits every instance whose index record reads, in id order, in one read transaction, as
    /// its journal entries leave it (every instance's last journal entry read in one pass, at the
    /// first instance that has some).
    private func forEachInstance(_ visit: (StoredInstance) -> Void) throws(StorageFailure) {
        try call {
            try environment.read { txn in
                var tails: [UInt64: JournalTail]?
                try txn.forEach(in: layout.instances) { key, value in
                    let id = try String(lmdbBytes: key)
                    if let base = IndexRecord.decodeStatic(value, id: id),
                       let indexed = try txn.value(forKey: base.key, in: layout.state, { IndexRecord.withState(base, $0) }) {
                        if indexed.journaledFrom > 0, tails == nil { tails = try lastJournalEntries(txn) }
                        visit(indexed.journaledFrom > 0 ? indexed.instance.advanced(to: tails?[base.key]) : indexed.instance)
                    }
                    return true
                }
            }
        }
    }

    /// A page along the instances database (keyed by id, in byte order): each instance as
    /// ``instance(id:)`` reads it, its journal tail looked up for it alone.
    public func instances(after: String?, limit: Int) throws(StorageFailure) -> [StoredInstance] {
        guard limit > 0 else { return [] }
        // The cursor starts at `after` (at most a key's length of it: no longer id can be a key)
        // and steps over the keys up to it.
        let start = after.flatMap { id -> String? in
            var length = 0
            let prefix = String(String.UnicodeScalarView(id.unicodeScalars.prefix { scalar in
                length += UTF8.width(scalar)
                return length <= environment.maxKeySize
            }))
            return prefix.isEmpty ? nil : prefix
        }
        let after = after.map { Array($0.utf8) }
        return try call {
            try environment.read { txn in
                var found: [StoredInstance] = []
                try txn.forEach(in: layout.instances, from: start) { key, value in
                    if let after, !after.lexicographicallyPrecedes(key) { return true }
                    let id = try String(lmdbBytes: key)
                    guard let base = IndexRecord.decodeStatic(value, id: id),
                          let indexed = try txn.value(forKey: base.key, in: layout.state, { IndexRecord.withState(base, $0) })
                    else { throw damagedRecord(id) }
                    found.append(try updatedByJournal(indexed, txn).instance)
                    return found.count < limit
                }
                return found
            }
        }
    }

    /// One pass over the index, as ``instances()`` reads it, keeping counts instead of records.
    public func instanceSummary() throws(StorageFailure) -> InstanceSummary {
        var summary = InstanceSummary()
        try forEachInstance { summary.add($0) }
        return summary
    }

    public func instanceIDs() throws(StorageFailure) -> [String] {
        try call {
            try environment.read { txn in
                var ids: [String] = []
                try txn.forEach(in: layout.instances) { key, _ in
                    ids.append(try String(lmdbBytes: key))
                    return true
                }
                return ids
            }
        }
    }

    // Claims and releases are committed without a sync of their own. A claim names a process,
    // and every process of this machine is gone after an operating-system crash, so a claim or
    // release that a crash loses changes nothing: the instance is free, or held by a dead process
    // and taken over, either way. The next synced commit makes them durable with it.
    //
    // A claim of an instance with entries in the journal checkpoints the journal first: the
    // resume that follows a claim reads the instance's log, which a journal would make a search of
    // every entry in it, for each instance resumed (a restart resumes many, and the instances a
    // busy store holds all have entries there). One claim's checkpoint moves every instance's
    // entries, so the others read their ranges of `log` (and their segments) too.

    public func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        try update(id: id, durability: .noSync, checkpointingJournal: true) { stored in
            if !stored.claim.isNone, !takingOverIf(stored.claim) { return .held(by: stored.claim) }
            stored.claim = claim
            return .claimed(stored)
        } ?? .notFound
    }

    public func release(id: String, claim: InstanceClaim) throws(StorageFailure) {
        _ = try update(id: id, durability: .noSync) { stored -> Void? in
            guard stored.claim == claim else { return nil }
            stored.claim = .none
            return ()
        }
    }

    public func setStatus(id: String, to status: InstanceStatus, at time: Int64, failure: String?) throws(StorageFailure) -> StoredInstance? {
        let failure = status == .failed ? failure : nil
        return try update(id: id, rewritingStatic: { $0.failure != failure }) { stored in
            stored.status = status
            stored.updated = time
            stored.failure = failure
            return stored
        }
    }

    /// Reads instance `id`'s record in a write transaction, lets `change` modify it and writes it
    /// back unless `change` returns `nil`; `nil` when there is no such instance.
    /// `checkpointingJournal`: if the instance has entries in the journal, the journal is moved
    /// into the archive first.
    /// `rewritingStatic`: whether the static part must be written again too (it holds the failure).
    private func update<R>(
        id: String, durability: EnvironmentConfiguration.Durability? = nil, checkpointingJournal: Bool = false,
        rewritingStatic: (StoredInstance) -> Bool = { _ in false }, _ change: (inout StoredInstance) -> R?
    ) throws(StorageFailure) -> R? {
        let layout = self.layout
        return try call {
            try environment.write(durability: durability) { txn -> R? in
                guard var found = try storedRecord(id: id, txn) else { return nil }
                if checkpointingJournal, found.journaledFrom > 0 {
                    // The checkpoint writes the instance's last journal entry into its record: the
                    // journal is not searched for it first.
                    try checkpoint(txn)
                    guard let moved = try storedRecord(id: id, txn) else { return nil }
                    found = moved
                } else {
                    found = try updatedByJournal(writing: found, txn)
                }
                var stored = found.instance
                let rewrite = rewritingStatic(stored)
                guard let result = change(&stored) else { return nil }
                try txn.put(IndexRecord.encodedState(stored, journaledFrom: found.journaledFrom), forKey: stored.key, in: layout.state)
                if rewrite { try txn.put(IndexRecord.encodedStatic(stored), forKey: id, in: layout.instances) }
                return result
            }
        }
    }

    public func delete(id: String) throws(StorageFailure) -> Bool {
        let layout = self.layout
        return try call {
            try environment.write { txn -> Bool in
                guard let key = try txn.value(forKey: id, in: layout.instances, { IndexRecord.decodeStatic($0, id: id)?.key }) else {
                    return try txn.delete(id, in: layout.instances)
                }
                knownIDs.withLock { $0[key] = nil }
                // Only an instance whose record says it has journal entries has any there (the
                // journal's invariants); they stay there for the next checkpoint to drop. Only a
                // damaged record has the journal read to delete them.
                let state = try txn.value(forKey: key, in: layout.state) { IndexRecord.decodeState($0) }
                if let state {
                    if state.journaledFrom > 0 {
                        try leaveJournaled(instance: key, from: state.journaledFrom, lastSequence: state.lastSequence, txn)
                    }
                } else {
                    try deleteJournaled(instance: key, txn)
                }
                try deleteLog(instance: key, txn)
                try txn.withCursor(on: layout.snapshots) { cursor in
                    var entry = try cursor.seek(atLeast: LogKey(instance: key, sequence: 0))
                    while let current = entry, try current.key(as: LogKey.self).instance == key {
                        try cursor.deleteCurrent()
                        entry = try cursor.current()
                    }
                }
                try txn.delete(key, in: layout.state)
                return try txn.delete(id, in: layout.instances)
            }
        }
    }
}
