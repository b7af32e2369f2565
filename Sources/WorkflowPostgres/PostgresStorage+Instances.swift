#if Postgres
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    /// The columns of `wf_instance` that make a ``StoredInstance``, in the order `storedInstance(_:)` reads.
    static let instanceColumns =
        "id, instance_key, workflow_type, codec, status, created_ns, updated_ns, last_seq, last_snapshot, owner_pid, owner_start, owner_token"

    public func create(_ new: NewInstance) throws(StorageFailure) -> StoredInstance? {
        guard new.entries.firstSequence == 1, !new.entries.isEmpty else {
            throw failure(.invalidInput, "create", "a new instance's log starts at sequence 1 with at least one entry")
        }
        let key = try write("create") { connection -> Int64? in
            let rows = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_create(\(new.id), \(new.workflowType), \(new.codec), \(Self.code(new.status)), \
                \(new.created), \(new.claim.pid), \(Int64(bitPattern: new.claim.processStart)), \(Int64(bitPattern: new.claim.token)), \
                \(Self.buffers(new.entries)), NULL)
                """, on: connection)
            return try rows.first?.decode(Int64?.self)
        }
        guard let key else { return nil }
        return StoredInstance(
            id: new.id, key: UInt64(bitPattern: key), workflowType: new.workflowType, codec: new.codec, status: new.status,
            created: new.created, updated: new.created, lastSequence: new.entries.lastSequence, lastSnapshot: 0, claim: new.claim)
    }

    public func instance(id: String) throws(StorageFailure) -> StoredInstance? {
        try run("read instance") { connection -> StoredInstance? in
            let rows = try self.rows(
                "SELECT \(unescaped: Self.instanceColumns) FROM \(unescaped: self.schema).wf_instance WHERE id = \(id)", on: connection)
            return try rows.first.map { try self.storedInstance($0) }
        }
    }

    public func instances() throws(StorageFailure) -> [StoredInstance] {
        try run("list instances") { connection -> [StoredInstance] in
            try self.rows(
                "SELECT \(unescaped: Self.instanceColumns) FROM \(unescaped: self.schema).wf_instance ORDER BY id COLLATE \"C\"",
                on: connection
            ).map { try self.storedInstance($0) }
        }
    }

    public func instanceIDs() throws(StorageFailure) -> [String] {
        try run("list instances") { connection -> [String] in
            try self.rows("SELECT id FROM \(unescaped: self.schema).wf_instance ORDER BY id COLLATE \"C\"", on: connection)
                .map { try $0.decode(String.self) }
        }
    }

    public func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        // Read, decide, then compare-and-set: a claim that changed in between is read again.
        while true {
            guard let stored = try instance(id: id) else { return .notFound }
            if !stored.claim.isNone, !takingOverIf(stored.claim) { return .held(by: stored.claim) }
            let changed = try write("claim") { connection -> Bool in
                let rows = try self.rows(
                    """
                    CALL \(unescaped: self.schema).wf_claim(\(id), \(stored.claim.pid), \(Int64(bitPattern: stored.claim.processStart)), \
                    \(Int64(bitPattern: stored.claim.token)), \(claim.pid), \(Int64(bitPattern: claim.processStart)), \
                    \(Int64(bitPattern: claim.token)), NULL)
                    """, on: connection)
                return try rows.first?.decode(Bool.self) ?? false
            }
            if changed {
                var claimed = stored
                claimed.claim = claim
                return .claimed(claimed)
            }
        }
    }

    public func release(id: String, claim: InstanceClaim) throws(StorageFailure) {
        guard !claim.isNone else { return }
        try write("release") { connection in
            _ = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_claim(\(id), \(claim.pid), \(Int64(bitPattern: claim.processStart)), \
                \(Int64(bitPattern: claim.token)), 0, 0, 0, NULL)
                """, on: connection)
        }
    }

    public func setStatus(id: String, to status: InstanceStatus, at time: Int64) throws(StorageFailure) -> StoredInstance? {
        let changed = try write("set status") { connection -> Bool in
            let rows = try self.rows(
                "CALL \(unescaped: self.schema).wf_set_status(\(id), \(Self.code(status)), \(time), NULL)", on: connection)
            return try rows.first?.decode(Bool.self) ?? false
        }
        return changed ? try instance(id: id) : nil
    }

    public func delete(id: String) throws(StorageFailure) -> Bool {
        try write("delete") { connection -> Bool in
            let rows = try self.rows("CALL \(unescaped: self.schema).wf_delete(\(id), NULL)", on: connection)
            return try rows.first?.decode(Bool.self) ?? false
        }
    }

    // MARK: Values

    /// A row of ``instanceColumns`` as a ``StoredInstance``.
    func storedInstance(_ row: PostgresRow) throws -> StoredInstance {
        let (id, key, type, codec, status, created, updated, last, snapshot, pid, start, token) = try row.decode(
            (String, Int64, String, String, Int16, Int64, Int64, Int64, Int64, Int32, Int64, Int64).self)
        return StoredInstance(
            id: id, key: UInt64(bitPattern: key), workflowType: type, codec: codec, status: try Self.status(status, id: id),
            created: created, updated: updated, lastSequence: UInt64(bitPattern: last), lastSnapshot: UInt64(bitPattern: snapshot),
            claim: InstanceClaim(pid: pid, processStart: UInt64(bitPattern: start), token: UInt64(bitPattern: token)))
    }

    /// How a status is stored.
    static func code(_ status: InstanceStatus) -> Int16 {
        switch status {
        case .running: 0
        case .completed: 1
        case .failed: 2
        }
    }

    static func status(_ code: Int16, id: String) throws -> InstanceStatus {
        switch code {
        case 0: return .running
        case 1: return .completed
        case 2: return .failed
        default: throw DamagedRow(detail: "instance \(id) has the unknown status \(code)")
        }
    }

    /// Each record's bytes as a buffer, for a `bytea[]` parameter.
    static func buffers(_ records: LogRecords) -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        buffers.reserveCapacity(records.count)
        records.forEach { _, bytes in buffers.append(ByteBuffer(bytes: bytes)) }
        return buffers
    }
}

/// A row the store cannot make sense of (reported as `.corrupted`).
struct DamagedRow: Error, Sendable {
    let detail: String
}
#endif
