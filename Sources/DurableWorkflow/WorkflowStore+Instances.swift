import LMDB
import Workflow

extension WorkflowStore {
    /// Starts a new instance `id` of `workflow`: its props become entry 1 of its log (committed
    /// before this returns), then the first render pass runs and its workers and side effects start.
    public func start<W: DurableWorkflow>(
        _ workflow: W, id: String, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        try checkID(id)
        let props = try StateCoding.encode(workflow, codec: configuration.codec, what: "root props", store: path, instance: id)
        let now = configuration.host.clock.now()
        let entry = LogEntry(
            sequence: 1, time: now, origin: .props, nodePath: Self.rootPath(of: W.self), actionTag: LogEntry.propsTag,
            actionVersion: 1, payload: props, digest: nil)
        let layout = self.layout, store = path
        let started = ContinuousClock.now
        let record: InstanceRecord = try storageCall(instance: id) {
            try environment.write { txn in
                if try txn.contains(id, in: layout.instances) {
                    throw DurableError(.instanceExists, store: store, instance: id, detail: "an instance with this id already exists",
                                       recovery: "Resume it, or pick another id")
                }
                let key = try txn.withValue(forKey: "nextInstanceKey", in: layout.meta) { try UInt64(lmdbBytes: $0) } ?? 1
                try txn.put(withUnsafeBytes(of: (key + 1).bigEndian) { Array($0) }, forKey: "nextInstanceKey", in: layout.meta)
                let record = InstanceRecord(
                    key: key, workflowType: String(reflecting: W.self), status: .running, created: now, updated: now,
                    lastSequence: 1, lastSnapshot: 0, owner: .claim(), codec: configuration.codec.name)
                try txn.put(entry.encoded(), forKey: LogKey(instance: key, sequence: 1), in: layout.log)
                try txn.put(record.encodedState(), forKey: record.stateKey, in: layout.log)
                try txn.put(record.encodedStatic(), forKey: id, in: layout.instances)
                return record
            }
        }
        // The props entry is the instance's first commit: observers hear of it like any other.
        let duration = ContinuousClock.now - started
        for observer in configuration.observers {
            observer.didAppend(entry, instance: id)
            observer.didCommit(instance: id, batchSize: 1, lastSequence: 1, duration: duration)
        }
        let journal = InstanceJournal(store: self, instanceID: id, record: record, configuration: configuration)
        return try WorkflowHost(workflow: workflow, configuration: configuration.host, journal: journal, initialSequence: 1)
    }

    /// Resumes instance `id` after a restart: rebuilds its tree from its latest snapshot (or its
    /// first entry) by replaying every later entry, with no worker or side effect running during
    /// replay (rule D3); then its live workers (with stable idempotency keys) and side effects start.
    ///
    /// Throws ``DurableError`` naming the instance and sequence for an unknown action tag, an
    /// undecodable payload, a corrupt entry or a digest mismatch; the log is left untouched.
    public func resume<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        let plan = try replayPlan(id: id, as: type, through: nil, useSnapshot: true, configuration: configuration)
        let configuration = plan.configuration
        let claimed = try claimOwnership(of: id, record: plan.record)
        let journal = InstanceJournal(store: self, instanceID: id, record: claimed, configuration: configuration)
        // A failed replay stops the host, which releases the claim (hostDidStop).
        return try WorkflowHost(
            workflow: plan.root, configuration: configuration.host, journal: journal, restorer: plan.restorer,
            initialSequence: plan.baseSequence, replay: { driver in try self.replay(plan, driver: driver) })
    }

    /// Claims instance `id` for a new host of this process, unless a live host holds it.
    func claimOwnership(of id: String, record: InstanceRecord) throws -> InstanceRecord {
        let layout = self.layout, store = path
        return try storageCall(instance: id) {
            try environment.write { txn in
                var current = try txn.value(forKey: record.stateKey, in: layout.log) { record.withState($0) } ?? record
                if current.owner.isAlive {
                    throw DurableError(.instanceInUse, store: store, instance: id,
                                       detail: "the instance is running in another host (process \(current.owner.pid))",
                                       recovery: "Stop that host first; a crashed process's claim is taken over automatically")
                }
                current.owner = .claim()
                try txn.put(current.encodedState(), forKey: current.stateKey, in: layout.log)
                return current
            }
        }
    }

    /// Clears `owner`'s claim on instance `id` (best effort: a released token is not alive anyway).
    func releaseOwnership(of id: String, record: InstanceRecord, owner: InstanceOwner) {
        owner.release()
        let layout = self.layout
        _ = try? environment.write { txn in
            guard var current = try txn.value(forKey: record.stateKey, in: layout.log, { record.withState($0) }),
                  current.owner == owner else { return }
            current.owner = .none
            try txn.put(current.encodedState(), forKey: current.stateKey, in: layout.log)
        }
    }

    /// Every instance, optionally only those with `status` and/or root workflow `type` (type name).
    public func instances(status: InstanceStatus? = nil, workflowType: String? = nil) throws -> [InstanceInfo] {
        try storageCall(instance: nil) {
            try environment.read { txn in
                var found: [InstanceInfo] = []
                try txn.forEach(in: layout.instances) { key, value in
                    if let base = InstanceRecord.decodeStatic(value),
                       let record = try txn.value(forKey: base.stateKey, in: layout.log, { base.withState($0) }),
                       status == nil || record.status == status,
                       workflowType == nil || record.workflowType == workflowType || record.workflowType.hasSuffix(".\(workflowType!)") {
                        found.append(record.info(id: try String(lmdbBytes: key)))
                    }
                    return true
                }
                return found
            }
        }
    }

    /// The instance `id`, or `nil`.
    public func instance(id: String) throws -> InstanceInfo? {
        try record(id: id).map { $0.info(id: id) }
    }

    /// Marks instance `id` completed (its log is kept until deleted).
    public func complete(id: String) throws {
        try setStatus(.completed, id: id)
    }

    /// Deletes instance `id`: its index entry, log and snapshots. Stop its host first.
    public func delete(id: String) throws {
        guard let record = try record(id: id) else { throw notFound(id) }
        if record.owner.isAlive {
            throw DurableError(.instanceInUse, store: path, instance: id, detail: "the instance is running in a host",
                               recovery: "Stop its host before deleting it")
        }
        let layout = self.layout
        try storageCall(instance: id) {
            try environment.write { txn in
                for database in [layout.log, layout.snapshots] {
                    try txn.withCursor(on: database) { cursor in
                        var entry = try cursor.seek(atLeast: LogKey(instance: record.key, sequence: 0))
                        while let current = entry, try current.key(as: LogKey.self).instance == record.key {
                            // Includes the index state at (key, UInt64.max).
                            try cursor.deleteCurrent()
                            entry = try cursor.current()
                        }
                    }
                }
                try txn.delete(id, in: layout.instances)
            }
        }
    }

    /// Entries `from`...`through` (default: to the end) of instance `id`'s log, in order.
    /// A corrupt entry is a ``DurableError/Kind/corruptEntry`` naming its sequence.
    public func entries(of id: String, from: UInt64 = 1, through: UInt64? = nil) throws -> [LogEntry] {
        guard let record = try record(id: id) else { throw notFound(id) }
        return try readEntries(record: record, id: id, from: from, through: through ?? record.lastSequence)
    }

    // MARK: Helpers

    func record(id: String) throws -> InstanceRecord? {
        try storageCall(instance: id) {
            try environment.read { txn in
                guard let base = try txn.value(forKey: id, in: layout.instances, { InstanceRecord.decodeStatic($0) }) else {
                    return nil
                }
                guard let record = try txn.value(forKey: base.stateKey, in: layout.log, { base.withState($0) }) else {
                    throw DurableError(.corruptEntry, store: path, instance: id, detail: "the instance's index entry is missing or corrupt",
                                       recovery: "Restore the store from a copy")
                }
                return record
            }
        }
    }

    func setStatus(_ status: InstanceStatus, id: String) throws {
        let layout = self.layout
        try storageCall(instance: id) {
            guard var record = try record(id: id) else { throw notFound(id) }
            try environment.write { txn in
                if let stored = try txn.value(forKey: record.stateKey, in: layout.log, { record.withState($0) }) {
                    record = stored
                }
                record.status = status
                record.updated = .now()
                try txn.put(record.encodedState(), forKey: record.stateKey, in: layout.log)
            }
        }
    }

    func readEntries(record: InstanceRecord, id: String, from: UInt64, through: UInt64) throws -> [LogEntry] {
        var entries: [LogEntry] = []
        try visitEntries(record: record, id: id, from: from, through: through) { entries.append($0.entry) }
        return entries
    }

    /// Calls `visit` with entries `from...through` of the instance, in order, read in place inside
    /// one read transaction (a view's payload is valid only during its call). A missing entry, one
    /// whose checksum fails or one on a damaged page is ``DurableError/Kind/corruptEntry`` naming
    /// its sequence; errors `visit` throws end the walk and are rethrown.
    func visitEntries(
        record: InstanceRecord, id: String, from: UInt64, through: UInt64, _ visit: (LogEntry.View) throws -> Void
    ) throws {
        // Sequences start at 1.
        let from = max(from, 1)
        guard from <= through else { return }
        var expected = from
        do {
            try visitEntries(record: record, id: id, from: from, through: through, expected: &expected, visit)
        } catch let error as LMDBError where error.kind == .corrupted {
            throw DurableError(.corruptEntry, store: path, instance: id, sequence: expected,
                               detail: "log entry \(expected) cannot be read: \(error.summary)", recovery: error.recovery, storageFailure: error.storageFailure)
        } catch let error as LMDBError {
            throw DurableError.storage(error, store: path, instance: id)
        }
    }

    private func visitEntries(
        record: InstanceRecord, id: String, from: UInt64, through: UInt64, expected: inout UInt64, _ visit: (LogEntry.View) throws -> Void
    ) throws {
        try environment.read { txn in
            var cache = LogEntry.DecodingCache()
            try txn.forEach(in: layout.log, from: LogKey(instance: record.key, sequence: from)) { key, value in
                let logKey = try LogKey(lmdbBytes: key)
                guard logKey.instance == record.key, logKey.sequence <= through else { return false }
                guard logKey.sequence == expected, let entry = LogEntry.View.decode(value, sequence: logKey.sequence, cache: &cache) else {
                    throw corrupt(id, sequence: expected)
                }
                try visit(entry)
                expected += 1
                return true
            }
            if expected <= through { throw corrupt(id, sequence: expected) }
        }
    }

    func corrupt(_ id: String, sequence: UInt64) -> DurableError {
        DurableError(.corruptEntry, store: path, instance: id, sequence: sequence,
                     detail: "log entry \(sequence) is missing or its bytes fail their checksum",
                     recovery: "Restore the store from a copy, or fork the instance before this sequence with `wfctl fork`")
    }

    func notFound(_ id: String) -> DurableError {
        DurableError(.instanceNotFound, store: path, instance: id, detail: "no instance has this id",
                     recovery: "List instances with `wfctl list \(path)`")
    }

    private func checkID(_ id: String) throws {
        guard !id.isEmpty, id.utf8.count <= 400 else {
            throw DurableError(.storage, store: path, instance: id, detail: "instance ids must be 1 to 400 bytes of UTF-8")
        }
    }

    /// Runs `body`, turning LMDB errors into ``DurableError``s that name the store and instance.
    func storageCall<R>(instance: String?, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as LMDBError {
            throw DurableError.storage(error, store: path, instance: instance)
        }
    }
}
