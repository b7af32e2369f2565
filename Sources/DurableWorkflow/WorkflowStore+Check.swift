import WorkflowStorage

/// What a walk over a whole store found.
public struct StoreCheckReport: Sendable, Codable {
    /// Instances whose logs were read.
    public let instances: Int
    /// Log entries read and checked (checksum, decoding, bounds).
    public let entries: UInt64
    /// Snapshots read and decoded.
    public let snapshots: Int
    /// Everything damaged, in the order found.
    public let damage: [StoreDamage]

    /// Whether nothing is damaged.
    public var isIntact: Bool { damage.isEmpty }

    /// A report (tools that check a store in another process make them too).
    public init(instances: Int, entries: UInt64, snapshots: Int, damage: [StoreDamage]) {
        self.instances = instances
        self.entries = entries
        self.snapshots = snapshots
        self.damage = damage
    }
}

extension WorkflowStore {
    /// Reads every page of the store in a child process, as `policy` says: on LMDB, a damaged
    /// page that would stop the process reading it (inside liblmdb, where no check of this
    /// library's reaches) stops that child instead, and the outcome says where it was reading.
    /// `WorkflowService` runs it at start (``PageWalkPolicy/whenUnchecked`` by default); to walk
    /// before this process reads anything at all, open the store with the walk
    /// (`StoreConfiguration.walkPagesFirst`). On PostgreSQL and in memory: `.notNeeded`.
    public func walkPages(_ policy: PageWalkPolicy = .always) -> PageWalkOutcome {
        backend.walkPages(policy)
    }

    /// Reads the whole store and reports what is damaged instead of stopping at the first
    /// problem: every record of every named database (so LMDB visits every page), every
    /// instance's index record, every log entry (checksum, decoding, dense sequences) and every
    /// snapshot. Read-only and safe against a running writer. `progress` is told what is read
    /// next, before it is read, so that a caller running this in a child process can say where
    /// it stopped if LMDB itself ends the process on a damaged page (`wfctl check` does).
    public func check(progress: (String) -> Void = { _ in }) throws -> StoreCheckReport {
        var damage = backend.checkStructure(progress: progress)
        var entries: UInt64 = 0, snapshots = 0
        progress("listing instances")
        var ids: [String] = []
        do {
            ids = try backend.instanceIDs()
        } catch {
            damage.append(StoreDamage(area: "instances", instance: nil, sequence: nil, detail: "\(error)"))
        }
        for id in ids {
            progress("reading instance \(id)")
            let record: StoredInstance
            do {
                guard let found = try self.record(id: id) else {
                    damage.append(StoreDamage(area: "instances", instance: id, sequence: nil, detail: "its index record is unreadable"))
                    continue
                }
                record = found
            } catch {
                damage.append(StoreDamage(area: "instances", instance: id, sequence: nil, detail: "\(error)"))
                continue
            }
            progress("reading the log of \(id), entries 1 to \(record.lastSequence)")
            var read: UInt64 = 0
            do {
                try visitEntries(record: record, id: id, from: 1, through: record.lastSequence) { _ in read += 1 }
            } catch let error as DurableError {
                damage.append(StoreDamage(area: "log", instance: id, sequence: error.sequence, detail: error.detail))
            } catch {
                damage.append(StoreDamage(area: "log", instance: id, sequence: nil, detail: "\(error)"))
            }
            entries += read
            progress("reading the snapshots of \(id)")
            do {
                try backend.readSnapshots(of: record.key, atMost: .max) { sequence, bytes in
                    if Snapshot.decode(bytes) == nil {
                        damage.append(StoreDamage(area: "snapshots", instance: id, sequence: sequence,
                                                  detail: "the snapshot does not decode (replay skips it)"))
                    } else {
                        snapshots += 1
                    }
                    return true
                }
            } catch {
                damage.append(StoreDamage(area: "snapshots", instance: id, sequence: nil, detail: "\(error)"))
            }
        }
        return StoreCheckReport(instances: ids.count, entries: entries, snapshots: snapshots, damage: damage)
    }
}
