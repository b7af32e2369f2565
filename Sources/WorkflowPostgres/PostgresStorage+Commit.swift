#if Postgres
import Foundation
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    public func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        guard !request.changes.isEmpty else { return [] }
        try requireLease("commit")
        // Each column of the request as an array parameter, written as the request is read.
        let instances = request.changes.count, entries = request.changes.reduce(0) { $0 + $1.entries.count }
        var keys = PostgresArrayParameter.int8(capacity: instances), ids = PostgresArrayParameter.text(capacity: instances)
        var pids = PostgresArrayParameter.int4(capacity: instances), starts = PostgresArrayParameter.int8(capacity: instances)
        var tokens = PostgresArrayParameter.int8(capacity: instances), firsts = PostgresArrayParameter.int8(capacity: instances)
        var counts = PostgresArrayParameter.int4(capacity: instances), updated = PostgresArrayParameter.int8(capacity: instances)
        var statuses = PostgresArrayParameter.int2(capacity: instances)
        var entryOwners = PostgresArrayParameter.int4(capacity: entries), entrySequences = PostgresArrayParameter.int8(capacity: entries)
        var records = PostgresArrayParameter.bytea(bytes: request.changes.reduce(0) { $0 + $1.entries.bytes.count + 4 * $1.entries.count })
        var snapshotOwners = PostgresArrayParameter.int4(), snapshotSequences = PostgresArrayParameter.int8()
        var snapshots = PostgresArrayParameter.bytea()
        var markOwners = PostgresArrayParameter.int4(), markConsumers = PostgresArrayParameter.uuid()
        var markVersions = PostgresArrayParameter.int8(), markTerminates = PostgresArrayParameter.bool()
        var markKeep = PostgresArrayParameter.int4()
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
            statuses.append(changes.status.map(Self.code) ?? -1)
            for offset in 0..<changes.entries.count {
                let sequence = changes.entries.firstSequence + UInt64(offset)
                entryOwners.append(owner)
                entrySequences.append(Int64(bitPattern: sequence))
                records.append(bytes: changes.entries.record(sequence))
            }
            for snapshot in changes.snapshots {
                snapshotOwners.append(owner)
                snapshotSequences.append(Int64(bitPattern: snapshot.sequence))
                snapshots.append(bytes: snapshot.bytes)
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
                CALL \(unescaped: self.schema).wf_commit(\(synced), \(self.hostID), \(keys), \(ids), \(pids), \(starts), \(tokens), \(firsts), \(counts), \
                \(updated), \(statuses), \(entryOwners), \(entrySequences), \(records), \(snapshotOwners), \(snapshotSequences), \(snapshots), \
                \(markOwners), \(markConsumers), \(markVersions), \(markTerminates), \(markKeep), NULL, NULL, NULL, NULL, NULL)
                """, on: connection)
            guard let row = rows.first else { throw DamagedRow(detail: "the commit procedure returned no row") }
            return row
        } }
        do {
            // Each answer is an array (NULL when there is nothing to say), read as it came.
            let answers = try row.decode((ByteBuffer?, ByteBuffer?, ByteBuffer?, ByteBuffer?, ByteBuffer?).self)
            func array<Element>(_ bytes: ByteBuffer?, _ elements: (PostgresArrayColumn) throws -> [Element]) throws -> [Element]? {
                guard let bytes else { return nil }
                do {
                    return try elements(PostgresArrayColumn(bytes))
                } catch {
                    throw DamagedRow(detail: "the commit procedure answered with \(error)")
                }
            }
            let written = try array(answers.0) { try $0.int32s() }
            let states = try array(answers.1) { try $0.int16s() }, outPids = try array(answers.2) { try $0.int32s() }
            let outStarts = try array(answers.3) { try $0.int64s() }, outTokens = try array(answers.4) { try $0.int64s() }
            // The instances written, each by its place in the request, in the server's order.
            var committed = [Bool](repeating: false, count: request.changes.count)
            for place in written ?? [] {
                let index = Int(place) - 1
                guard committed.indices.contains(index), !committed[index] else {
                    throw DamagedRow(detail: "the commit procedure answered for an instance it was not given")
                }
                committed[index] = true
            }
            return try request.changes.indices.map { index -> CommitOutcome in
                if committed[index] { return .committed }
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
