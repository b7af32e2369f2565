import LMDB
import WorkflowStorage

extension LMDBStorage {
    public func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        let durability: EnvironmentConfiguration.Durability? = request.durability == .processCrashSafe ? .noSync : nil
        let markWriter = deliveryMarkWriter.withLock { $0 }
        if markWriter == nil, request.changes.contains(where: { !$0.deliveryMarks.isEmpty }) {
            throw failure(.invalidInput, "commit", "the commit carries signal delivery marks, and no signal center is open on the store")
        }
        return try call {
            try environment.write(durability: durability) { txn in
                var outcomes: [CommitOutcome] = []
                outcomes.reserveCapacity(request.changes.count)
                for changes in request.changes {
                    outcomes.append(try write(changes, markWriter: markWriter, in: txn))
                }
                return outcomes
            }
        }
    }

    /// Writes one instance's changes; a refusal is found before anything of them is written.
    /// (A transaction that grows the map runs again from the start, so this starts afresh.)
    private func write(
        _ changes: InstanceChanges, markWriter: (@Sendable (DeliveryMarkRecord, borrowing WriteTransaction) throws -> Void)?,
        in txn: borrowing WriteTransaction
    ) throws -> CommitOutcome {
        let key = changes.key, stateKey = IndexRecord.stateKey(key)
        guard let base = try txn.value(forKey: changes.id, in: layout.instances, { IndexRecord.decodeStatic($0, id: changes.id) }),
              base.key == key,
              var stored = try txn.value(forKey: stateKey, in: layout.log, { IndexRecord.withState(base, $0) }) else {
            return .refused(current: nil)
        }
        guard stored.claim == changes.claim else { return .refused(current: stored.claim) }
        let entries = changes.entries
        if !entries.isEmpty {
            guard entries.firstSequence == stored.lastSequence + 1 else {
                throw failure(.invalidInput, "commit",
                              "instance \(changes.id)'s entries start at \(entries.firstSequence), after \(stored.lastSequence)")
            }
            stored.lastSequence = entries.lastSequence
            stored.updated = changes.updated
        }
        for snapshot in changes.snapshots { stored.lastSnapshot = max(stored.lastSnapshot, snapshot.sequence) }
        // One cursor for every entry: consecutive keys mostly land on the page it stands on.
        try txn.withCursor(on: layout.log) { cursor in
            // The newest instance's index state is the last key of the log: it is lifted off
            // and put back after the new entries, so that each lands after the last key of its
            // page. (Inserted before a key that stays last, each entry that fills a page would
            // make LMDB split it in half, and the log's pages would stay half empty.)
            var atEnd = try cursor.last().map { try $0.key(as: LogKey.self) == stateKey } ?? false
            if atEnd { try cursor.deleteCurrent() }
            try entries.forEach { sequence, bytes in
                var keyBytes = LogKey.bytes(instance: key, sequence: sequence)
                let space = try withUnsafeBytes(of: &keyBytes) { keyBytes throws(LMDBError) in
                    // Appended (`MDB_APPEND`: no search from the root) while nothing follows the
                    // instance's entries; an append that finds a later key clears `atEnd`.
                    if atEnd, let space = try cursor.reserve(bytes.count, forKeyBytes: keyBytes, append: true) { return space }
                    atEnd = false
                    return try cursor.reserve(bytes.count, forKeyBytes: keyBytes, append: false)!
                }
                space.copyMemory(from: bytes)
            }
            let state = IndexRecord.encodedState(stored)
            let fill = { (target: UnsafeMutableRawBufferPointer) in state.withUnsafeBytes { target.copyMemory(from: $0) } }
            if atEnd, try cursor.reserveAtEnd(state.count, forKey: stateKey, fill) { return }
            try cursor.reserve(state.count, forKey: stateKey, fill)
        }
        for snapshot in changes.snapshots {
            try txn.put(snapshot.bytes, forKey: LogKey(instance: key, sequence: snapshot.sequence), in: layout.snapshots)
        }
        if let markWriter {
            for mark in changes.deliveryMarks { try markWriter(mark, txn) }
        }
        return .committed(stored)
    }

    // MARK: Reads

    public func readEntries(
        of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        // The index state record sits after every entry, at sequence UInt64.max.
        let through = min(through, .max - 1)
        guard from <= through else { return }
        do {
            try environment.read { txn in
                try txn.forEach(in: layout.log, from: LogKey(instance: key, sequence: from)) { keyBytes, value in
                    let logKey = try LogKey(lmdbBytes: keyBytes)
                    guard logKey.instance == key, logKey.sequence <= through else { return false }
                    return try visit(logKey.sequence, value)
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
                guard var stored = try instance(id: id, txn) else {
                    throw failure(.notFound, "put snapshot", "no instance has the id \(id)")
                }
                try txn.put(bytes, forKey: LogKey(instance: stored.key, sequence: sequence), in: layout.snapshots)
                stored.lastSnapshot = max(stored.lastSnapshot, sequence)
                try txn.put(IndexRecord.encodedState(stored), forKey: IndexRecord.stateKey(stored.key), in: layout.log)
            }
        }
    }
}
