#if Postgres
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    /// How many rows one read fetches: a replay reads a log in pages of this many entries.
    static let readPage = 4_096

    public func readEntries(
        of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard from <= through else { return }
        var next = Int64(clamping: from)
        let last = Int64(clamping: through)
        while next <= last {
            let page = try run("read entries") { connection -> [PostgresRow] in
                try self.rows(
                    """
                    SELECT seq, record FROM \(unescaped: self.schema).wf_log
                     WHERE instance_key = \(Int64(bitPattern: key)) AND seq >= \(next) AND seq <= \(last)
                     ORDER BY seq LIMIT \(Self.readPage)
                    """, on: connection)
            }
            for row in page {
                let (sequence, record) = try record(row, operation: "read entries")
                let goOn = try record.readableBytesView.withUnsafeBytes { try visit(UInt64(bitPattern: sequence), $0) }
                guard goOn else { return }
                next = sequence + 1
            }
            if page.count < Self.readPage { return }
        }
    }

    public func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        var below = Int64(clamping: sequence)
        while true {
            let page = try run("read snapshots") { connection -> [PostgresRow] in
                try self.rows(
                    """
                    SELECT seq, state FROM \(unescaped: self.schema).wf_snapshot
                     WHERE instance_key = \(Int64(bitPattern: key)) AND seq <= \(below)
                     ORDER BY seq DESC LIMIT 8
                    """, on: connection)
            }
            for row in page {
                let (found, state) = try record(row, operation: "read snapshots")
                let goOn = try state.readableBytesView.withUnsafeBytes { try visit(UInt64(bitPattern: found), $0) }
                guard goOn, found > 0 else { return }
                below = found - 1
            }
            if page.count < 8 { return }
        }
    }

    /// One query: the newest snapshot and the entries after it, as a resume reads them.
    public func readTail(of key: UInt64, through sequence: UInt64, limit: Int) throws -> LogTail {
        let instance = Int64(bitPattern: key), last = Int64(clamping: sequence)
        let rows = try run("read tail") { connection -> [PostgresRow] in
            try self.rows(
                """
                WITH s AS (
                    SELECT seq, state FROM \(unescaped: self.schema).wf_snapshot
                     WHERE instance_key = \(instance) AND seq <= \(last) ORDER BY seq DESC LIMIT 1
                ), l AS (
                    SELECT seq, record FROM \(unescaped: self.schema).wf_log
                     WHERE instance_key = \(instance) AND seq > COALESCE((SELECT seq FROM s), 0) AND seq <= \(last)
                     ORDER BY seq LIMIT \(max(0, limit))
                )
                SELECT (SELECT seq FROM s), (SELECT state FROM s),
                       (SELECT array_agg(seq ORDER BY seq) FROM l), (SELECT array_agg(record ORDER BY seq) FROM l)
                """, on: connection)
        }
        guard let row = rows.first else { throw failure(.corrupted, "read tail", "the tail query returned no row") }
        let (snapshotSequence, snapshotBytes, sequences, records): (Int64?, ByteBuffer?, [Int64]?, [ByteBuffer]?)
        do {
            (snapshotSequence, snapshotBytes, sequences, records) = try row.decode((Int64?, ByteBuffer?, [Int64]?, [ByteBuffer]?).self)
        } catch {
            throw storageFailure(error, operation: "read tail")
        }
        var snapshot: LogTail.Snapshot?
        if let snapshotSequence, let snapshotBytes {
            snapshot = LogTail.Snapshot(sequence: UInt64(bitPattern: snapshotSequence), bytes: Array(snapshotBytes.readableBytesView))
        }
        var entries = LogRecords(firstSequence: (snapshot?.sequence ?? 0) + 1, capacity: sequences?.count ?? 0)
        for (found, record) in zip(sequences ?? [], records ?? []) {
            guard UInt64(bitPattern: found) == entries.lastSequence + 1 else { break }
            record.readableBytesView.withUnsafeBytes { entries.append($0) }
        }
        return LogTail(snapshot: snapshot, entries: entries)
    }

    public func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure) {
        let existed = try write("put snapshot") { connection -> Bool in
            let rows = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_put_snapshot(\(id), \(Int64(bitPattern: sequence)), \(ByteBuffer(bytes: bytes)), NULL)
                """, on: connection)
            return try rows.first?.decode(Bool.self) ?? false
        }
        guard existed else { throw failure(.notFound, "put snapshot", "no instance has the id \(id)") }
    }

    // MARK: Signals

    public func signalStorage() throws(StorageFailure) -> any SignalStorage {
        PostgresSignalStorage(storage: self)
    }

    // MARK: Operations

    public func statistics() throws(StorageFailure) -> StorageStatistics {
        try run("statistics") { connection -> StorageStatistics in
            let rows = try self.rows(
                """
                SELECT (SELECT count(*) FROM \(unescaped: self.schema).wf_instance),
                       (SELECT count(*) FROM \(unescaped: self.schema).wf_log),
                       (SELECT count(*) FROM \(unescaped: self.schema).wf_snapshot),
                       (SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                          JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = \(self.schema) AND c.relkind = 'r')
                """, on: connection)
            guard let row = rows.first else { throw DamagedRow(detail: "the statistics query returned no row") }
            let (instances, entries, snapshots, bytes) = try row.decode((Int64, Int64, Int64, Int64).self)
            return StorageStatistics(
                backend: self.name, formatVersion: UInt32(PostgresSchema.format), instances: Int(instances), logEntries: Int(entries),
                snapshots: Int(snapshots), usedBytes: Int(bytes))
        }
    }

    /// Checks that every instance's log holds exactly its sequences 1 through its last one (the
    /// database checks its own pages; the engine then checks each entry's bytes).
    public func checkStructure(progress: (String) -> Void) -> [StoreDamage] {
        progress("instances and logs")
        do {
            return try run("check") { connection -> [StoreDamage] in
                try self.rows(
                    """
                    SELECT i.id, COALESCE(l.count, 0), COALESCE(l.max, 0)
                      FROM \(unescaped: self.schema).wf_instance i
                      LEFT JOIN (SELECT instance_key, count(*) AS count, max(seq) AS max FROM \(unescaped: self.schema).wf_log
                                  GROUP BY instance_key) l ON l.instance_key = i.instance_key
                     WHERE COALESCE(l.count, 0) = 0 OR l.count <> l.max
                     ORDER BY i.id COLLATE "C"
                    """, on: connection
                ).map { row in
                    let (id, count, max) = try row.decode((String, Int64, Int64).self)
                    let detail = count == 0
                        ? "the log holds no entry (an instance starts with at least one)"
                        : "the log holds \(count) entries, the last at \(max): \(max - count) missing"
                    return StoreDamage(area: "log", instance: id, sequence: UInt64(bitPattern: max), detail: detail)
                }
            }
        } catch {
            return [StoreDamage(area: "meta", instance: nil, sequence: nil, detail: error.description)]
        }
    }

    public func copy(to destination: String) throws(StorageFailure) {
        throw failure(.invalidInput, "copy", "a PostgreSQL store is copied by the database's own tools",
                      recovery: "Use pg_dump --schema=\(schema), or export instances with `wfctl export`")
    }

    /// A row of (sequence, bytes).
    private func record(_ row: PostgresRow, operation: String) throws(StorageFailure) -> (Int64, ByteBuffer) {
        do {
            return try row.decode((Int64, ByteBuffer).self)
        } catch {
            throw storageFailure(error, operation: operation)
        }
    }
}
#endif
