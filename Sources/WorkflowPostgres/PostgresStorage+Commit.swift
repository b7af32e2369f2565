#if Postgres
import Foundation
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    public func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        guard !request.changes.isEmpty else { return [] }
        try requireLease("commit")
        var keys: [Int64] = [], ids: [String] = [], pids: [Int32] = [], starts: [Int64] = [], tokens: [Int64] = []
        var firsts: [Int64] = [], counts: [Int32] = [], updated: [Int64] = [], snapshotMaxima: [Int64] = [], statuses: [Int16] = []
        var entryOwners: [Int32] = [], entrySequences: [Int64] = [], records: [ByteBuffer] = []
        var snapshotOwners: [Int32] = [], snapshotSequences: [Int64] = [], snapshots: [ByteBuffer] = []
        var markOwners: [Int32] = [], markConsumers: [UUID] = [], markVersions: [Int64] = [], markTerminates: [Bool] = [], markKeep: [Int32] = []
        for (index, changes) in request.changes.enumerated() {
            let owner = Int32(index + 1)
            keys.append(Int64(bitPattern: changes.key))
            ids.append(changes.id)
            pids.append(changes.claim.pid)
            starts.append(Int64(bitPattern: changes.claim.processStart))
            tokens.append(Int64(bitPattern: changes.claim.token))
            firsts.append(Int64(bitPattern: changes.entries.firstSequence))
            counts.append(Int32(changes.entries.count))
            updated.append(changes.updated)
            snapshotMaxima.append(Int64(bitPattern: changes.snapshots.map(\.sequence).max() ?? 0))
            statuses.append(changes.status.map(Self.code) ?? -1)
            changes.entries.forEach { sequence, bytes in
                entryOwners.append(owner)
                entrySequences.append(Int64(bitPattern: sequence))
                records.append(ByteBuffer(bytes: bytes))
            }
            for snapshot in changes.snapshots {
                snapshotOwners.append(owner)
                snapshotSequences.append(Int64(bitPattern: snapshot.sequence))
                snapshots.append(ByteBuffer(bytes: snapshot.bytes))
            }
            for mark in changes.deliveryMarks {
                markOwners.append(owner)
                markConsumers.append(mark.consumer)
                markVersions.append(Int64(bitPattern: mark.version))
                markTerminates.append(mark.terminates)
                markKeep.append(Int32(clamping: mark.keepLatest))
            }
        }
        let synced = request.durability == .synced
        // A deadlock or serialization failure (concurrent commits pruning the same signal's
        // versions) rolled the whole commit back: it is retried as it was, a few times.
        let row = try retryingConflicts { () throws(StorageFailure) -> PostgresRow in try write("commit") { connection -> PostgresRow in
            let rows = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_commit(\(synced), \(keys), \(ids), \(pids), \(starts), \(tokens), \(firsts), \(counts), \
                \(updated), \(snapshotMaxima), \(statuses), \(entryOwners), \(entrySequences), \(records), \(snapshotOwners), \(snapshotSequences), \(snapshots), \
                \(markOwners), \(markConsumers), \(markVersions), \(markTerminates), \(markKeep), \
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """, on: connection)
            guard let row = rows.first else { throw DamagedRow(detail: "the commit procedure returned no row") }
            return row
        } }
        do {
            let (written, statuses, created, outUpdated, lasts, lastSnapshots, types, codecs, states, outPids, outStarts, outTokens) = try row.decode(
                ([Int32]?, [Int16]?, [Int64]?, [Int64]?, [Int64]?, [Int64]?, [String]?, [String]?, [Int16]?, [Int32]?, [Int64]?, [Int64]?).self)
            // The instances written come in the server's order, each with its place in the request.
            var outcomes = [CommitOutcome?](repeating: nil, count: request.changes.count)
            let count = written?.count ?? 0
            guard [statuses?.count, created?.count, outUpdated?.count, lasts?.count, lastSnapshots?.count, types?.count, codecs?.count]
                .allSatisfy({ ($0 ?? 0) == count }) else { throw DamagedRow(detail: "the commit procedure's answers differ in length") }
            for (row, place) in (written ?? []).enumerated() {
                let index = Int(place) - 1
                guard outcomes.indices.contains(index), outcomes[index] == nil, let statuses, let created, let outUpdated, let lasts,
                      let lastSnapshots, let types, let codecs else {
                    throw DamagedRow(detail: "the commit procedure answered for an instance it was not given")
                }
                let changes = request.changes[index]
                outcomes[index] = .committed(StoredInstance(
                    id: changes.id, key: changes.key, workflowType: types[row], codec: codecs[row],
                    status: try Self.status(statuses[row], id: changes.id), created: created[row], updated: outUpdated[row],
                    lastSequence: UInt64(bitPattern: lasts[row]), lastSnapshot: UInt64(bitPattern: lastSnapshots[row]), claim: changes.claim))
            }
            return try request.changes.indices.map { index -> CommitOutcome in
                if let outcome = outcomes[index] { return outcome }
                // Not written: the procedure said why, for every instance, in request order.
                guard let states, let outPids, let outStarts, let outTokens,
                      [states.count, outPids.count, outStarts.count, outTokens.count].allSatisfy({ $0 == request.changes.count }) else {
                    throw DamagedRow(detail: "the commit procedure did not say why instance \(request.changes[index].id) was not written")
                }
                let claim = InstanceClaim(
                    pid: outPids[index], processStart: UInt64(bitPattern: outStarts[index]), token: UInt64(bitPattern: outTokens[index]))
                switch states[index] {
                case 1: return .refused(current: claim)
                case 3:
                    // The store does not say which mark: the instance's changes carry one per delivery, rarely more.
                    let mark = request.changes[index].deliveryMarks.first
                    return .alreadyDelivered(consumer: mark?.consumer ?? UUID(), version: mark?.version ?? 0)
                default: return .refused(current: nil)
                }
            }
        } catch {
            throw storageFailure(error, operation: "commit")
        }
    }

    /// Runs `body` again (up to 4 more times) while it fails with SQLSTATE 40P01 or 40001: the
    /// transaction was rolled back as a whole, so running it again is safe.
    private func retryingConflicts<Result>(_ body: () throws(StorageFailure) -> Result) throws(StorageFailure) -> Result {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let failure where failure.kind == .busy && attempt < 4
                && ["40P01", "40001"].contains((failure.underlying as? PSQLError)?.serverInfo?[.sqlState] ?? "") {
                attempt += 1
            }
        }
    }

    /// Commits with `synchronous_commit` off are flushed by the server within its
    /// `wal_writer_delay`; this waits for every earlier one by committing a synced transaction
    /// that has a transaction id (so that its commit flushes the WAL up to it).
    public func sync() throws(StorageFailure) {
        guard !isReadOnly else { return }
        try run("sync") { connection in
            try self.execute("BEGIN", on: connection)
            try self.execute("SELECT txid_current()", on: connection)
            try self.execute("COMMIT", on: connection)
        }
    }

    /// The server flushes `processCrashSafe` commits on its own (`wal_writer_delay`, 200 ms by default).
    public func syncPeriodically(every interval: Duration) {}
}
#endif
