#if Postgres
import DurableWorkflow
import Foundation
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    /// The columns that make a ``StoredInstance``, in the order `storedInstance(_:)` reads, from
    /// ``instanceTables``: an instance's row, with its last sequence from its log's last entry
    /// (and its time of last change, when that entry came after the last status change) and its
    /// newest snapshot's sequence (a commit writes no copy of these into the row: the fence only
    /// reads it).
    var instanceColumns: String {
        """
        i.id, i.instance_key, i.workflow_type, i.codec, i.status, i.created_ns, \
        CASE WHEN l.seq > i.updated_seq AND l.logged_ns <> 0 THEN l.logged_ns ELSE i.updated_ns END, \
        COALESCE(l.seq, 0), COALESCE((SELECT max(s.seq) FROM \(schema).wf_snapshot s WHERE s.instance_key = i.instance_key), 0), \
        i.owner_pid, i.owner_start, i.owner_token, i.code_version, i.failure
        """
    }

    /// `wf_instance` as `i`, each row with its log's last entry as `l` (its sequence and when it was logged).
    var instanceTables: String {
        """
        \(schema).wf_instance i LEFT JOIN LATERAL (SELECT seq, logged_ns FROM \(schema).wf_log \
        WHERE instance_key = i.instance_key ORDER BY seq DESC LIMIT 1) l ON true
        """
    }

    public func create(_ new: NewInstance) throws(StorageFailure) -> StoredInstance? {
        guard new.entries.firstSequence == 1, !new.entries.isEmpty else {
            throw failure(.invalidInput, "create", "a new instance's log starts at sequence 1 with at least one entry")
        }
        if !new.claim.isNone { try requireLease("create") }
        let host = new.claim.isNone ? 0 : hostID
        let key: Int64?
        do {
            key = try write("create") { connection -> Int64? in
                let rows = try self.rows(
                    """
                    CALL \(unescaped: self.schema).wf_create(\(new.id), \(new.workflowType), \(new.codec), \(Self.code(new.status)), \
                    \(new.created), \(new.claim.pid), \(Int64(bitPattern: new.claim.processStart)), \(Int64(bitPattern: new.claim.token)), \
                    \(host), \(Self.buffers(new.entries)), \(new.codeVersion), NULL)
                    """, on: connection)
                return try rows.first?.decode(Int64?.self)
            }
        } catch {
            // Only a claimed instance can be told apart from one another process created.
            if !new.claim.isNone, let made = settleUnknownClaim(id: new.id, claim: new.claim, after: error) { return made }
            throw error
        }
        guard let key else { return nil }
        return StoredInstance(
            id: new.id, key: UInt64(bitPattern: key), workflowType: new.workflowType, codec: new.codec, status: new.status,
            created: new.created, updated: new.created, lastSequence: new.entries.lastSequence, lastSnapshot: 0, claim: new.claim,
            codeVersion: new.codeVersion)
    }

    public func instance(id: String) throws(StorageFailure) -> StoredInstance? {
        try run("read instance") { connection -> StoredInstance? in
            let rows = try self.rows(
                "SELECT \(unescaped: self.instanceColumns) FROM \(unescaped: self.instanceTables) WHERE i.id = \(id)", on: connection)
            return try rows.first.map { try self.storedInstance($0) }
        }
    }

    public func instances() throws(StorageFailure) -> [StoredInstance] {
        try run("list instances") { connection -> [StoredInstance] in
            try self.rows(
                "SELECT \(unescaped: self.instanceColumns) FROM \(unescaped: self.instanceTables) ORDER BY i.id COLLATE \"C\"",
                on: connection
            ).map { try self.storedInstance($0) }
        }
    }

    /// A page along `wf_instance_id_bytes` (ids in byte order, whatever the collation).
    public func instances(after: String?, limit: Int) throws(StorageFailure) -> [StoredInstance] {
        guard limit > 0 else { return [] }
        return try run("list instances") { connection -> [StoredInstance] in
            let rows: [PostgresRow]
            if let after {
                rows = try self.rows(
                    "SELECT \(unescaped: self.instanceColumns) FROM \(unescaped: self.instanceTables) WHERE i.id COLLATE \"C\" > \(after) ORDER BY i.id COLLATE \"C\" LIMIT \(limit)",
                    on: connection)
            } else {
                rows = try self.rows(
                    "SELECT \(unescaped: self.instanceColumns) FROM \(unescaped: self.instanceTables) ORDER BY i.id COLLATE \"C\" LIMIT \(limit)",
                    on: connection)
            }
            return try rows.map { try self.storedInstance($0) }
        }
    }

    /// Counts by status from the rows alone; the oldest change of the running ones with their
    /// logs' last entries (as ``instanceColumns`` reads it).
    public func instanceSummary() throws(StorageFailure) -> InstanceSummary {
        try run("count instances") { connection -> InstanceSummary in
            var summary = InstanceSummary()
            for row in try self.rows("SELECT status, count(*) FROM \(unescaped: self.schema).wf_instance GROUP BY status", on: connection) {
                let (code, count) = try row.decode((Int16, Int64).self)
                summary.counts[try Self.status(code, id: "(count)"), default: 0] += Int(count)
            }
            let running = Self.code(.running)
            let oldest = try self.rows(
                """
                SELECT min(CASE WHEN l.seq > i.updated_seq AND l.logged_ns <> 0 THEN l.logged_ns ELSE i.updated_ns END) \
                FROM \(unescaped: self.instanceTables) WHERE i.status = \(running)
                """, on: connection)
            summary.oldestRunningUpdate = try oldest.first?.decode(Int64?.self)
            return summary
        }
    }

    public func instanceIDs() throws(StorageFailure) -> [String] {
        try run("list instances") { connection -> [String] in
            try self.rows("SELECT id FROM \(unescaped: self.schema).wf_instance ORDER BY id COLLATE \"C\"", on: connection)
                .map { try $0.decode(String.self) }
        }
    }

    /// Gives the instance to `claim` when nobody holds it; when this process holds it, or a
    /// process of this machine whose lease has not run out, when `takingOverIf` lets go of the
    /// holder (the engine knows this machine's processes); when a process of another machine
    /// holds it, only once that process's lease has run out. Read, decided, then set by
    /// compare-and-set: a claim that changed in between is read again.
    public func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        try requireLease("claim")
        // A free instance (the common case: its last host stopped) is claimed in one round trip.
        do {
            if let claimed = try claimIfFree(id: id, as: claim) { return .claimed(claimed) }
        } catch {
            if let made = settleUnknownClaim(id: id, claim: claim, after: error) { return .claimed(made) }
            throw error
        }
        while true {
            guard let (stored, holder) = try ownership(of: id) else { return .notFound }
            if !stored.claim.isNone {
                let mayTakeOver = switch holder {
                case .thisProcess, .thisMachine, .unknown: takingOverIf(stored.claim)
                case .otherMachine: false
                case .expired: true
                }
                if !mayTakeOver { return .held(by: stored.claim) }
            }
            let claimed: StoredInstance?
            do {
                claimed = try write("claim") { connection -> StoredInstance? in
                    let rows = try self.rows(
                        """
                        CALL \(unescaped: self.schema).wf_claim(\(id), \(stored.claim.pid), \(Int64(bitPattern: stored.claim.processStart)), \
                        \(Int64(bitPattern: stored.claim.token)), \(holder.host), \(claim.pid), \(Int64(bitPattern: claim.processStart)), \
                        \(Int64(bitPattern: claim.token)), \(self.hostID), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                        """, on: connection)
                    return try self.claimedInstance(rows.first, id: id, claim: claim)
                }
            } catch {
                if let made = settleUnknownClaim(id: id, claim: claim, after: error) { return .claimed(made) }
                throw error
            }
            // As the claim left it: the old host's last entries are in (see wf_claim).
            if var claimed {
                claimed.failure = stored.failure
                return .claimed(claimed)
            }
        }
    }

    /// Claims instance `id` if no claim and no host hold it: the instance as claimed, or `nil`
    /// (held, or not there) for the caller to read and decide.
    private func claimIfFree(id: String, as claim: InstanceClaim) throws(StorageFailure) -> StoredInstance? {
        try write("claim") { connection -> StoredInstance? in
            let rows = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_claim_free(\(id), \(claim.pid), \(Int64(bitPattern: claim.processStart)), \
                \(Int64(bitPattern: claim.token)), \(self.hostID), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                """, on: connection)
            return try self.claimedInstance(rows.first, id: id, claim: claim)
        }
    }

    /// The answer of `wf_claim` or `wf_claim_free`: the instance as claimed, or `nil` when the
    /// claim was not made.
    private func claimedInstance(_ row: PostgresRow?, id: String, claim: InstanceClaim) throws -> StoredInstance? {
        guard let row else { throw DamagedRow(detail: "the claim procedure returned no row") }
        let (key, type, codec, status, created, updated, last, snapshot, codeVersion) = try row.decode(
            (Int64?, String?, String?, Int16?, Int64?, Int64?, Int64?, Int64?, String?).self)
        guard let key, let type, let codec, let status, let created, let updated, let last, let snapshot else { return nil }
        return StoredInstance(
            id: id, key: UInt64(bitPattern: key), workflowType: type, codec: codec, status: try Self.status(status, id: id),
            created: created, updated: updated, lastSequence: UInt64(bitPattern: last), lastSnapshot: UInt64(bitPattern: snapshot),
            claim: claim, codeVersion: codeVersion)
    }

    /// After a claim (or a claimed create) that failed: the instance as claimed if the claim was
    /// made after all (a connection that broke after the server committed it leaves the outcome
    /// unknown), read again on a fresh connection; `nil` if it was not made. When even that read fails, the
    /// claim, if it was made, is cleared before the next ``instancesToTakeOver()``, so the
    /// instance is listed again rather than left held by this live process with nobody running it.
    private func settleUnknownClaim(id: String, claim: InstanceClaim, after failure: StorageFailure) -> StoredInstance? {
        guard failure.kind == .unavailable else { return nil }
        do {
            guard let (current, _) = try ownership(of: id), current.claim == claim else { return nil }
            changes.noteCommit()
            return current
        } catch {
            unreleased.withLock { $0[id] = claim }
            return nil
        }
    }

    /// Clears `claim` on the instance (if it still holds it). A release that fails is kept and
    /// tried again before the next ``instancesToTakeOver()``: it is safe to repeat (it changes
    /// the row only while that claim holds it).
    public func release(id: String, claim: InstanceClaim) throws(StorageFailure) {
        guard !claim.isNone else { return }
        do {
            try write("release") { connection in
                _ = try self.rows(
                    """
                    CALL \(unescaped: self.schema).wf_claim(\(id), \(claim.pid), \(Int64(bitPattern: claim.processStart)), \
                    \(Int64(bitPattern: claim.token)), \(self.hostID), 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
                    """, on: connection)
            }
            unreleased.withLock { _ = $0.removeValue(forKey: id) }
        } catch {
            if !configuration.readOnly { unreleased.withLock { $0[id] = claim } }
            throw error
        }
    }

    /// Tries again the releases that failed; those that fail again stay for the next time.
    func retryReleases() throws(StorageFailure) {
        for (id, claim) in unreleased.withLock({ $0 }) {
            try release(id: id, claim: claim)
        }
    }

    /// Ends the lease of each other host of this machine whose process is provably dead (gone,
    /// or its pid now another process's), as the host would have had it stopped cleanly: its
    /// instances are then taken over at once, by the live hosts of any machine, rather than when
    /// its lease runs out. Only a host of the same machine can tell; hosts of older formats, whose
    /// process is not recorded, wait for their leases.
    func endLeasesOfDeadLocalHosts() throws(StorageFailure) {
        let hosts = try run("list the hosts of this machine") { connection -> [(Int64, Int32, Int64)] in
            try self.rows(
                """
                SELECT host_id, process_id, process_start FROM \(unescaped: self.schema).wf_host
                 WHERE machine = \(self.configuration.machine) AND host_id <> \(self.hostID) AND process_id <> 0
                   AND lease_until > clock_timestamp()
                """, on: connection
            ).map { try $0.decode((Int64, Int32, Int64).self) }
        }
        for (host, pid, start) in hosts where ProcessIdentity(pid: pid, startTime: UInt64(bitPattern: start)).isProvablyDead {
            try write("end the lease of a dead host") { connection in
                _ = try self.rows("CALL \(unescaped: self.schema).wf_host_leave(\(host), NULL)", on: connection)
            }
            logger.info("ended the lease of a host of this machine whose process is gone; its instances are taken over now",
                        metadata: ["host": "\(host)", "pid": "\(pid)"])
        }
    }

    /// Records with this host the code versions it runs, when they changed.
    func publish(_ supported: SupportedCodeVersions) throws(StorageFailure) {
        guard publishedCodeVersions.withLock({ $0 }) != supported else { return }
        let versions = supported.versions.map { $0.sorted() }
        try write("record the host's code versions") { connection in
            _ = try self.rows(
                """
                CALL \(unescaped: self.schema).wf_host_code_versions(\(self.hostID), \(versions), \(supported.runsUnversioned), NULL)
                """, on: connection)
        }
        publishedCodeVersions.withLock { $0 = supported }
    }

    /// Who holds an instance, as far as taking it over goes.
    enum Holder {
        /// This store object's host.
        case thisProcess(host: Int64)
        /// A host on this machine whose lease has not run out.
        case thisMachine(host: Int64)
        /// A host on another machine whose lease has not run out.
        case otherMachine(host: Int64)
        /// A host whose lease ran out (or that left).
        case expired(host: Int64)
        /// No host recorded (an instance claimed before hosts were recorded, or not claimed).
        case unknown

        var host: Int64 {
            switch self {
            case .thisProcess(let host), .thisMachine(let host), .otherMachine(let host), .expired(let host): host
            case .unknown: 0
            }
        }
    }

    /// The instance and who holds it, read in one statement.
    func ownership(of id: String) throws(StorageFailure) -> (StoredInstance, Holder)? {
        try run("read instance") { connection -> (StoredInstance, Holder)? in
            let rows = try self.rows(
                """
                SELECT \(unescaped: self.instanceColumns),
                       i.owner_host, h.machine, h.lease_until > clock_timestamp()
                  FROM \(unescaped: self.instanceTables)
                  LEFT JOIN \(unescaped: self.schema).wf_host h ON h.host_id = i.owner_host
                 WHERE i.id = \(id)
                """, on: connection)
            guard let row = rows.first else { return nil }
            let stored = try self.storedInstance(row)
            let columns = row.makeRandomAccess()
            let host = try columns[14].decode(Int64.self)
            let machine = try columns[15].decode(String?.self), live = try columns[16].decode(Bool?.self)
            let holder: Holder
            if host == 0 {
                holder = .unknown
            } else if host == self.hostID {
                holder = .thisProcess(host: host)
            } else if live != true {
                holder = .expired(host: host)
            } else if machine == self.configuration.machine {
                holder = .thisMachine(host: host)
            } else {
                holder = .otherMachine(host: host)
            }
            return (stored, holder)
        }
    }

    public func setStatus(id: String, to status: InstanceStatus, at time: Int64, failure: String?) throws(StorageFailure) -> StoredInstance? {
        let changed = try write("set status") { connection -> Bool in
            let rows = try self.rows(
                "CALL \(unescaped: self.schema).wf_set_status(\(id), \(Self.code(status)), \(time), \(failure), NULL)", on: connection)
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
        let (id, key, type, codec, status, created, updated, last, snapshot, pid, start, token, codeVersion, failure) = try row.decode(
            (String, Int64, String, String, Int16, Int64, Int64, Int64, Int64, Int32, Int64, Int64, String?, String?).self)
        return StoredInstance(
            id: id, key: UInt64(bitPattern: key), workflowType: type, codec: codec, status: try Self.status(status, id: id),
            created: created, updated: updated, lastSequence: UInt64(bitPattern: last), lastSnapshot: UInt64(bitPattern: snapshot),
            claim: InstanceClaim(pid: pid, processStart: UInt64(bitPattern: start), token: UInt64(bitPattern: token)), codeVersion: codeVersion,
            failure: failure)
    }

    /// How a status is stored.
    static func code(_ status: InstanceStatus) -> Int16 {
        switch status {
        case .running: 0
        case .completed: 1
        case .failed: 2
        case .cancelled: 3
        case .paused: 4
        case .terminated: 5
        }
    }

    static func status(_ code: Int16, id: String) throws -> InstanceStatus {
        switch code {
        case 0: return .running
        case 1: return .completed
        case 2: return .failed
        case 3: return .cancelled
        case 4: return .paused
        case 5: return .terminated
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

/// `columns` (a comma-separated list) with each name prefixed by `table.`.
func qualified(_ columns: String, by table: String) -> String {
    columns.split(separator: ",").map { "\(table)." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
}

/// A row the store cannot make sense of (reported as `.corrupted`).
struct DamagedRow: Error, Sendable {
    let detail: String
}
#endif
