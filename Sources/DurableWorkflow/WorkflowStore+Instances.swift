import Logging
import Tracing
import Workflow
import WorkflowStorage

extension WorkflowStore {
    /// Starts a new instance `id` of `workflow`: its props become entry 1 of its log (committed
    /// before this returns), then the first render pass runs and its workers and side effects start.
    public func start<W: DurableWorkflow>(
        _ workflow: W, id: String, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        try checkID(id)
        let now = configuration.host.clock.now()
        let record = try create(id: id, type: W.self, entries: [try propsEntry(workflow, id: id, time: now, configuration: configuration)],
                                time: now, configuration: configuration)
        configuration.logger.debug("started an instance", metadata: ["instance": "\(id)", "workflow": "\(W.workflowName)"])
        let versions = configuration.newInstanceVersions()
        let journal = InstanceJournal(store: self, instanceID: id, record: record, configuration: configuration, versions: versions)
        return try WorkflowHost(
            workflow: workflow, configuration: configuration.hostConfiguration, journal: journal, versions: versions, initialSequence: 1)
    }

    /// Resumes instance `id` after a restart: rebuilds its tree from its latest snapshot (or its
    /// first entry) by replaying every later entry, with no worker or side effect running during
    /// replay (rule D3); then its live workers (with stable idempotency keys) and side effects start.
    ///
    /// Throws ``DurableError`` naming the instance and sequence for an unknown action tag, an
    /// undecodable payload, a corrupt entry or a digest mismatch; the log is left untouched.
    /// A `InstanceStatus.failed` instance that replays is marked running again; a completed
    /// one (see `FinishingWorkflow`) finishes again: its host settles
    /// `WorkflowHost.completion` with the same output and stops.
    public func resume<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        try resume(id: id, as: type, configuration: configuration, checkingCodeVersion: true)
    }

    /// ``resume(id:as:configuration:)``; `checkingCodeVersion: false` when the caller knows the
    /// configuration runs the instance's code version (``resumeAll(_:configuration:)``).
    func resume<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration, checkingCodeVersion: Bool
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        if checkingCodeVersion, configuration.supportedCodeVersions != .all {
            // Refused before the claim: a build that runs it may be claiming it meanwhile.
            guard let record = try record(id: id) else { throw notFound(id) }
            try checkCodeVersion(of: record, configuration: configuration)
        }
        // The claim comes first and returns the instance as it stands; its newest snapshot and
        // the entries after it are then read at once (one round trip to a database server).
        let claimed: StoredInstance
        do {
            claimed = try claimOwnership(of: id, logger: configuration.logger)
        } catch {
            // What is wrong with the instance itself is said before who holds it.
            let plan = try replayPlan(id: id, as: type, through: nil, useSnapshot: true, configuration: configuration)
            if plan.record.status == .cancelled || plan.record.status == .terminated { throw cancelled(id, plan.record.status) }
            throw error
        }
        var claim: StoredInstance? = claimed
        return try withSnapshotFallback(id: id, useSnapshot: true, logger: configuration.logger) { useSnapshot in
            // A failed host released the first claim: the replay of the whole log claims again.
            let claimed = try claim ?? claimOwnership(of: id, logger: configuration.logger)
            claim = nil
            return try resume(claimed: claimed, as: type, useSnapshot: useSnapshot, configuration: configuration)
        }
    }

    /// Resumes the instance `claimed` (held by this process's new claim), from its latest
    /// snapshot when `useSnapshot`. The claim is released when this throws.
    private func resume<W: DurableWorkflow>(
        claimed: StoredInstance, as type: W.Type, useSnapshot: Bool, configuration: DurableConfiguration
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        let id = claimed.id
        let plan: ReplayPlan<W>
        do {
            let tail = useSnapshot ? try? backend.readTail(of: claimed.key, through: claimed.lastSequence, limit: Int(Self.replayChunk)) : nil
            plan = try replayPlan(record: claimed, id: id, as: type, through: nil, useSnapshot: useSnapshot, configuration: configuration, tail: tail)
            if claimed.status == .cancelled || claimed.status == .terminated { throw cancelled(id, claimed.status) }
        } catch {
            releaseOwnership(of: id, owner: claimed.claim)
            throw error
        }
        let configuration = plan.configuration
        let versions = plan.makeVersions()
        let journal = InstanceJournal(store: self, instanceID: id, record: claimed, configuration: configuration, versions: versions)
        // A failed replay stops the host, which releases the claim (hostDidStop).
        let started = ContinuousClock.now
        let span = configuration.activeTracer.map { Self.replaySpan($0, id: id, type: W.self, plan: plan) }
        let host: WorkflowHost<W>
        do {
            host = try WorkflowHost(
                workflow: plan.root, configuration: configuration.hostConfiguration, journal: journal, restorer: plan.restorer,
                versions: versions, initialSequence: plan.baseSequence,
                replay: { driver in
                    try self.replay(plan, driver: driver, versions: versions) { summary in journal.recordedForms = summary.forms }
                })
        } catch {
            configuration.logger.debug("an instance could not be replayed", metadata: ["instance": "\(id)", "error": "\(error)"])
            span?.recordError(error)
            span?.end()
            throw error
        }
        span?.end()
        let duration = ContinuousClock.now - started, entries = claimed.lastSequence - plan.baseSequence
        metrics.replayed(entries: entries, duration: duration)
        configuration.logger.debug("resumed an instance", metadata: [
            "instance": "\(id)", "from": "\(plan.baseSequence)", "entries": "\(entries)", "duration": "\(duration)",
        ])
        // An instance `resumeAll` marked failed runs again once it replays.
        if claimed.status == .failed { try setStatus(.running, id: id) }
        return host
    }

    /// Throws ``DurableError/Kind/unsupportedCodeVersion`` unless the configuration runs the
    /// code version `record` started under.
    func checkCodeVersion(of record: StoredInstance, configuration: DurableConfiguration) throws {
        guard !configuration.supportedCodeVersions.contains(record.codeVersion) else { return }
        let started = record.codeVersion.map { "the code version \"\($0)\"" } ?? "no code version"
        throw DurableError(
            .unsupportedCodeVersion, store: path, instance: record.id,
            detail: "the instance started under \(started), and this build runs \(configuration.supportedCodeVersions)",
            recovery: "Leave it to a build that runs it, or add its version to DurableConfiguration.supportedCodeVersions if this build replays it")
    }

    private func cancelled(_ id: String, _ status: InstanceStatus) -> DurableError {
        DurableError(.instanceCancelled, store: path, instance: id, detail: "the instance was \(status.rawValue)",
                     recovery: "A \(status.rawValue) instance is not resumed; read its log with `wfctl log`, or delete it")
    }

    /// A span for the replay of a resume.
    private static func replaySpan<W>(_ tracer: any Tracer, id: String, type: W.Type, plan: ReplayPlan<W>) -> any Span {
        let span = tracer.startSpan("workflow.replay", ofKind: .internal)
        span.attributes["workflow.instance"] = id
        span.attributes["workflow.type"] = W.workflowName
        span.attributes["workflow.replay.from"] = Int(plan.baseSequence)
        span.attributes["workflow.replay.to"] = Int(plan.target)
        return span
    }

    /// Entry 1 of a new instance: its root props.
    func propsEntry<W: DurableWorkflow>(_ workflow: W, id: String, time: WallTime, configuration: DurableConfiguration) throws -> LogEntry {
        let props = try StateCoding.encode(workflow, codec: configuration.codec, what: "root props", store: path, instance: id)
        // A new instance takes the newest version of every marker its build declares.
        return LogEntry(sequence: 1, time: time, origin: .props, nodePath: Self.rootPath(of: W.self), actionTag: LogEntry.propsTag,
                        actionVersion: 1, payload: props, digest: nil,
                        notes: EntryNotes(versionMarkers: configuration.newInstanceMarkers))
    }

    /// Creates instance `id` of root type `W` with `entries` (from sequence 1) in one commit,
    /// claimed by a new host of this process; observers hear of it as of any commit.
    func create<W: Workflow>(id: String, type: W.Type, entries: [LogEntry], time: WallTime, configuration: DurableConfiguration) throws -> StoredInstance {
        var records = LogRecords(firstSequence: 1)
        for entry in entries { records.append(entry.encoded()) }
        let started = ContinuousClock.now
        let claim = InstanceOwner.claim()
        let created: StoredInstance?
        do {
            created = try storageCall(instance: id) { () throws(StorageFailure) in
                try backend.create(NewInstance(
                    id: id, workflowType: W.workflowName, codec: configuration.codec.name, status: .running,
                    created: time.nanosecondsSinceEpoch, claim: claim, entries: records, codeVersion: configuration.codeVersion))
            }
        } catch {
            // As for a failed claim: no host runs with it.
            claim.release()
            throw error
        }
        guard let record = created else {
            claim.release()
            throw DurableError(.instanceExists, store: path, instance: id, detail: "an instance with this id already exists",
                               recovery: "Resume it (startOrResume does either), or pick another id")
        }
        let duration = ContinuousClock.now - started
        // A commit as the pipeline's are: the props entry and a first action are entries too.
        metrics.committed(entries: entries.count, actions: entries.filter { !$0.isProps }.count, instances: 1, duration: duration)
        for observer in configuration.observers {
            for entry in entries { observer.didAppend(entry, instance: id) }
            observer.didCommit(instance: id, batchSize: entries.count, lastSequence: UInt64(entries.count), duration: duration)
        }
        return record
    }

    /// Claims instance `id` for a new host of this process, unless a live host holds it.
    func claimOwnership(of id: String, logger: Logger) throws -> StoredInstance {
        let claim = InstanceOwner.claim()
        var takenFrom: InstanceClaim?
        let outcome: ClaimOutcome
        do {
            outcome = try storageCall(instance: id) { () throws(StorageFailure) in
                try backend.claim(id: id, as: claim, takingOverIf: { holder in
                    if holder.isAlive { return false }
                    takenFrom = holder
                    return true
                })
            }
        } catch {
            // No host runs with this claim: if the store holds it all the same (an outcome the
            // backend could not learn), a later resume in this process may take it over.
            claim.release()
            throw error
        }
        switch outcome {
        case .claimed(let record):
            if let takenFrom {
                logger.info("took over an instance whose process is gone", metadata: ["instance": "\(id)", "from_pid": "\(takenFrom.pid)"])
            }
            return record
        case .held(let other):
            claim.release()
            throw DurableError(.instanceInUse, store: path, instance: id,
                               detail: "the instance is running in another host (process \(other.pid))",
                               recovery: "Stop that host first; a crashed process's claim is taken over automatically")
        case .notFound:
            claim.release()
            throw notFound(id)
        }
    }

    /// Clears `owner`'s claim on instance `id` (best effort: a released token is not alive anyway).
    func releaseOwnership(of id: String, owner: InstanceOwner) {
        owner.release()
        try? backend.release(id: id, claim: owner)
    }

    /// Every instance, optionally only those with `status`, root workflow `type` (type name)
    /// and/or `codeVersion` (the code version they started under; `.some(nil)`: none).
    public func instances(status: InstanceStatus? = nil, workflowType: String? = nil, codeVersion: String?? = nil) throws -> [InstanceInfo] {
        let filter = InstanceFilter(status: status, workflowType: workflowType, codeVersion: codeVersion)
        return try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances() }.map(\.info).filter(filter.matches)
    }

    /// How many instances there are of each status, and when the running one that has waited
    /// longest last changed: counted in the store, never listed into memory.
    public func instanceSummary() throws -> InstanceSummary {
        try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instanceSummary() }
    }

    /// A page of the instances `filter` keeps, in id order, after the instance `after` (from the
    /// first when `nil`): at most `limit`, read from the store a page at a time, never the whole
    /// listing at once. A filter few instances meet ends the page early, once `examiningAtMost`
    /// instances were read: the page then has fewer than `limit` (perhaps none) and a `next` to
    /// go on from, so that every call stays short on a store of millions.
    public func instances(
        matching filter: InstanceFilter = InstanceFilter(), after: String? = nil, limit: Int = 100, examiningAtMost budget: Int = 10_000
    ) throws -> InstancePage {
        let limit = max(1, limit)
        // Without a filter a page is what the store reads; with one, larger reads find its matches.
        let read = filter.isEmpty ? min(limit, budget) : max(limit, min(1_000, budget))
        var found: [InstanceInfo] = []
        var cursor = after
        var examined = 0
        while true {
            let page = try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances(after: cursor, limit: read) }
            for record in page {
                examined += 1
                cursor = record.id
                let info = record.info
                if filter.matches(info) { found.append(info) }
                if found.count == limit || examined >= budget { return InstancePage(instances: found, next: cursor, examined: examined) }
            }
            if page.count < read { return InstancePage(instances: found, next: nil, examined: examined) }
        }
    }

    /// The running instances of root type `workflowType` (a workflow name) that no live host
    /// holds and whose code version `supporting` contains: those a service should run (a
    /// crashed process's, those an operator resumed, a dead PostgreSQL host's as the store
    /// spreads them). `WorkflowService` adopts them as it runs.
    public func instancesAwaitingHost(workflowType: String, supporting: SupportedCodeVersions = .all) throws -> [String] {
        if let decided = try storageCall(instance: nil, { () throws(StorageFailure) in try backend.instancesAwaitingHost(supporting: supporting) }) {
            let wanted = Set(decided)
            return try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances() }
                .filter { wanted.contains($0.id) && $0.workflowType == workflowType }.map(\.id)
        }
        return try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances() }
            .filter { $0.status == .running && $0.workflowType == workflowType && !$0.claim.isAlive && supporting.contains($0.codeVersion) }
            .map(\.id)
    }

    /// The running instances this process holds that another live host should run now, where the
    /// store spreads instances over hosts (PostgreSQL: a host joined, and the spread gives them to
    /// it); none on a store one process runs. `WorkflowService` hands them over as it runs: it stops
    /// each at a point where none of its task attempts is in flight, which commits what the
    /// instance holds and releases it, and the other host adopts it.
    public func instancesToHandOver() throws -> [String] {
        try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instancesToHandOver() }
    }

    /// The instance `id`, or `nil`.
    public func instance(id: String) throws -> InstanceInfo? {
        try record(id: id)?.info
    }

    /// Marks instance `id` completed (its log is kept until deleted).
    public func complete(id: String) throws {
        try setStatus(.completed, id: id)
    }

    /// Marks a `InstanceStatus.failed` instance running again, so that the next
    /// ``resumeAll(_:configuration:)`` resumes it (after its cause was fixed: a decoder
    /// registered, a snapshot removed). ``resume(id:as:configuration:)`` does this itself.
    public func markRunning(id: String) throws {
        guard let record = try record(id: id) else { throw notFound(id) }
        guard record.status == .failed else {
            throw DurableError(.storage, store: path, instance: id, detail: "the instance is \(record.status.rawValue), not failed",
                               recovery: "Only a failed instance is marked running again")
        }
        try setStatus(.running, id: id)
    }

    /// Deletes instance `id`: its index entry, log and snapshots. A live host that runs it (in
    /// this process or another) stops first and deletes it (``delete(id:timeout:)``, waiting up
    /// to 10 seconds for it).
    public func delete(id: String) throws {
        let answer = try delete(id: id, timeout: .seconds(10))
        if answer.outcome == .refused {
            throw DurableError(.storage, store: path, instance: id, detail: "the instance was not deleted: \(answer.detail)")
        }
    }

    /// Entries `from`...`through` (default: to the end) of instance `id`'s log, in order.
    /// A corrupt entry is a ``DurableError/Kind/corruptEntry`` naming its sequence.
    public func entries(of id: String, from: UInt64 = 1, through: UInt64? = nil) throws -> [LogEntry] {
        guard let record = try record(id: id) else { throw notFound(id) }
        return try readEntries(record: record, id: id, from: from, through: through ?? record.lastSequence)
    }

    // MARK: Helpers

    func record(id: String) throws -> StoredInstance? {
        do {
            return try backend.instance(id: id)
        } catch where error.kind == .corrupted {
            throw DurableError(.corruptEntry, store: path, instance: id, detail: "the instance's index entry is missing or corrupt",
                               recovery: "Restore the store from a copy", storageFailure: error)
        } catch {
            throw DurableError.storage(error, store: path, instance: id)
        }
    }

    func setStatus(_ status: InstanceStatus, id: String, failure: DurableError? = nil) throws {
        let reason = failure.map { "\($0.kind): \($0)" }
        let updated = try storageCall(instance: id) { () throws(StorageFailure) in
            try backend.setStatus(id: id, to: status, at: WallTime.now().nanosecondsSinceEpoch, failure: reason)
        }
        if updated == nil { throw notFound(id) }
    }

    func readEntries(record: StoredInstance, id: String, from: UInt64, through: UInt64) throws -> [LogEntry] {
        var entries: [LogEntry] = []
        try visitEntries(record: record, id: id, from: from, through: through) { entries.append($0.entry) }
        return entries
    }

    /// Calls `visit` with entries `from...through` of the instance, in order (a view's payload is
    /// valid only during its call). Entries are pulled from the backend in chunks, each copied out
    /// in one read, and visited after the read is over: no caller's code (a workflow's `apply` and
    /// `render` during replay) runs inside a storage read. A missing entry, one whose checksum
    /// fails or one on a damaged page is ``DurableError/Kind/corruptEntry`` naming its sequence;
    /// errors `visit` throws end the walk and are rethrown.
    func visitEntries(
        record: StoredInstance, id: String, from: UInt64, through: UInt64, _ visit: (LogEntry.View) throws -> Void
    ) throws {
        // Sequences start at 1.
        var next = max(from, 1)
        var cache = LogEntry.DecodingCache()
        while next <= through {
            let last = min(through, next + Self.replayChunk - 1)
            let (records, failure) = pull(record: record, id: id, from: next, through: last)
            try visitRecords(records, id: id, from: next, through: last, cache: &cache, visit)
            if let failure { throw failure }
            next = last + 1
        }
    }

    /// Calls `visit` with the entries of `records` from `from` through `through`, each decoded in
    /// place; one that does not decode is ``DurableError/Kind/corruptEntry`` naming its sequence.
    func visitRecords(
        _ records: LogRecords, id: String, from: UInt64, through: UInt64, cache: inout LogEntry.DecodingCache,
        _ visit: (LogEntry.View) throws -> Void
    ) throws {
        try records.forEach { sequence, bytes in
            guard sequence >= from, sequence <= through else { return }
            guard let entry = LogEntry.View.decode(bytes, sequence: sequence, cache: &cache) else { throw corrupt(id, sequence: sequence) }
            try visit(entry)
        }
    }

    /// Entries `from...through` of the instance, copied out of the store in one read, and why
    /// the read stopped before `through` (a missing, out-of-order or unreadable entry): the
    /// entries before that one are returned too.
    private func pull(record: StoredInstance, id: String, from: UInt64, through: UInt64) -> (LogRecords, DurableError?) {
        var records = LogRecords(firstSequence: from, capacity: Int(through - from + 1))
        var expected = from
        do {
            try backend.readEntries(of: record.key, from: from, through: through) { sequence, bytes in
                guard sequence == expected else { throw corrupt(id, sequence: expected) }
                records.append(bytes)
                expected += 1
                return true
            }
        } catch let failure as StorageFailure where failure.kind == .corrupted {
            return (records, DurableError(.corruptEntry, store: path, instance: id, sequence: expected,
                                          detail: "log entry \(expected) cannot be read: \(failure.summary)", recovery: failure.recovery,
                                          storageFailure: failure))
        } catch let failure as StorageFailure {
            return (records, DurableError.storage(failure, store: path, instance: id))
        } catch {
            return (records, error as? DurableError ?? corrupt(id, sequence: expected))
        }
        return (records, expected <= through ? corrupt(id, sequence: expected) : nil)
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

    func checkID(_ id: String) throws {
        guard !id.isEmpty, id.utf8.count <= 400 else {
            throw DurableError(.storage, store: path, instance: id, detail: "instance ids must be 1 to 400 bytes of UTF-8")
        }
    }

    /// Runs `body`, turning storage failures into ``DurableError``s that name the store and instance.
    func storageCall<R>(instance: String?, _ body: () throws(StorageFailure) -> R) throws(DurableError) -> R {
        do {
            return try body()
        } catch {
            throw DurableError.storage(error, store: path, instance: instance)
        }
    }
}
