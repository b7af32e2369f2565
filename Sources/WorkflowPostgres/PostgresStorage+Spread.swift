#if Postgres
import PostgresNIO
import WorkflowStorage

/// Who runs which instance when several hosts share a store: the running instances are spread
/// over the live hosts that take over instances (``HostSpread``). A host takes over the free
/// instances and those of expired hosts that the spread gives it, and hands over those it holds
/// that the spread now gives another live host (one that joined), so that every host runs its
/// share; an instance moves only through its holder's release and the other's claim.
extension PostgresStorage {
    /// The ids of the running instances this process should take over, in id order: those nobody
    /// holds and those whose host's lease ran out (a host of this machine whose process is
    /// provably dead has its lease ended first: its instances are listed at once), as the spread
    /// over the live hosts that call this method gives them to this one (processes that never
    /// call it, such as tools, get none). Empty while this process's own lease is not held. A
    /// service calls it every few seconds and resumes each (`store.resume(id:as:configuration:)`):
    /// replay rebuilds the state, and workers restart with the idempotency keys they had. The
    /// instances of this process's stopped hosts whose claims could not be cleared then (the
    /// server was out of reach) are released first, so they are listed too.
    ///
    /// `supporting` names the code versions this host runs (rule V4; it is recorded with the
    /// host for the others to see): an instance goes only to the live hosts that run its code
    /// version, spread over them alone, so that a takeover never moves an instance onto a host
    /// that cannot replay it, and one that no live host runs waits for one that does.
    public func instancesAwaitingHost(supporting: SupportedCodeVersions) throws(StorageFailure) -> [String]? {
        try instancesToTakeOver(supporting: supporting)
    }

    public func instancesToTakeOver(supporting: SupportedCodeVersions = .all) throws(StorageFailure) -> [String] {
        guard let lease, lease.isHeld else { return [] }
        do {
            try lease.markTakesOver()
        } catch {
            throw storageFailure(error, operation: "list instances to take over")
        }
        try publish(supporting)
        try retryReleases()
        try endLeasesOfDeadLocalHosts()
        let (candidates, spread) = try run("list instances to take over") { connection -> ([(String, String?)], HostSpread) in
            let candidates = try self.rows(
                """
                SELECT i.id, i.code_version FROM \(unescaped: self.schema).wf_instance i
                  LEFT JOIN \(unescaped: self.schema).wf_host h ON h.host_id = i.owner_host AND h.lease_until > clock_timestamp()
                 WHERE i.status = 0 AND (i.owner_pid = 0 OR (i.owner_host <> 0 AND h.host_id IS NULL))
                 ORDER BY i.id COLLATE "C"
                """, on: connection
            ).map { row in try row.decode((String, String?).self) }
            return (candidates, try self.spread(on: connection))
        }
        guard spread.contains(lease.id) else { return [] }
        return candidates.filter { spread.host(for: $0.0, codeVersion: $0.1) == lease.id }.map(\.0)
    }

    /// The ids of the running instances this host holds that the spread now gives another live
    /// host (one that joined since, or one that runs their code version while this one no longer
    /// says it does: the versions each host last published with ``instancesToTakeOver(supporting:)``),
    /// in id order: a service stops each at a point where none of its task attempts is in flight,
    /// which commits what it holds and releases it, and the other host takes it over within its
    /// adoption interval. Empty while this process's own lease is not held or before it takes
    /// over instances itself.
    public func instancesToHandOver() throws(StorageFailure) -> [String] {
        guard let lease, lease.isHeld else { return [] }
        let (held, spread) = try run("list instances to hand over") { connection -> ([(String, String?)], HostSpread) in
            let held = try self.rows(
                """
                SELECT id, code_version FROM \(unescaped: self.schema).wf_instance
                 WHERE owner_host = \(lease.id) AND status = 0 ORDER BY id COLLATE "C"
                """, on: connection
            ).map { row in try row.decode((String, String?).self) }
            return (held, try self.spread(on: connection))
        }
        guard spread.contains(lease.id) else { return [] }
        return held.filter { instance in
            guard let host = spread.host(for: instance.0, codeVersion: instance.1) else { return false }
            return host != lease.id
        }.map(\.0)
    }

    /// The live hosts that take over instances, with the code versions each runs.
    private func spread(on connection: PostgresConnection) throws -> HostSpread {
        let hosts = try rows(
            """
            SELECT host_id, code_versions, runs_unversioned FROM \(unescaped: schema).wf_host
             WHERE lease_until > clock_timestamp() AND takes_over ORDER BY host_id
            """, on: connection
        ).map { row -> (id: Int64, versions: SupportedCodeVersions) in
            let (host, versions, unversioned) = try row.decode((Int64, [String]?, Bool).self)
            return (host, versions.map { .only(Set($0), unversioned: unversioned) } ?? .all)
        }
        return HostSpread(hosts: hosts)
    }
}
#endif
