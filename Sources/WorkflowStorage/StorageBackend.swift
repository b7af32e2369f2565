/// Where a `WorkflowStore` (DurableWorkflow) keeps its instances: the index, each instance's log
/// and snapshots, in the engine's terms. LMDB (the embedded default) and an in-memory store
/// implement it; every implementation passes the same contract suite.
///
/// The engine calls a backend from many threads at once. The store's commit pipeline calls
/// ``commit(_:)`` with everything waiting from every instance, from at most
/// ``concurrentCommits`` threads at once, never with one instance in two calls at once.
/// A backend may block the calling thread for its I/O; it never calls back into the engine except
/// through the closures it is given, and those run on the calling thread before the call returns.
///
/// Failures of the store itself are ``StorageFailure``s that say what, where and what to do, with
/// the backend's own error as the underlying one. Errors a visiting closure throws end the walk
/// and are rethrown as they are.
public protocol StorageBackend: AnyObject, Sendable {
    /// The backend's name, for messages (`"LMDB"`).
    var name: String { get }
    /// Where the store is: a directory, a URL, `"memory"`.
    var location: String { get }
    /// Whether a commit that returned survives the process (an in-memory store does not).
    var isDurable: Bool { get }
    /// Whether every write fails (opened for inspection).
    var isReadOnly: Bool { get }

    // MARK: Instances

    /// Creates an instance with its first entries and a new key, or returns `nil` when the id is taken.
    func create(_ instance: NewInstance) throws(StorageFailure) -> StoredInstance?
    /// The instance with this id, or `nil`. A damaged index record is a `.corrupted` failure.
    func instance(id: String) throws(StorageFailure) -> StoredInstance?
    /// Every instance whose index record reads, in id order.
    func instances() throws(StorageFailure) -> [StoredInstance]
    /// A page of the listing: up to `limit` instances in id order (byte order of their UTF-8),
    /// those after `after` (from the first when `nil`), read without reading the others; a
    /// damaged index record in the page is a `.corrupted` failure.
    func instances(after: String?, limit: Int) throws(StorageFailure) -> [StoredInstance]
    /// How many instances there are of each status, and the oldest time of last change among
    /// the running ones, counted in the store (one pass or one aggregate), never listed.
    func instanceSummary() throws(StorageFailure) -> InstanceSummary
    /// The id of every instance, in order, without reading their records (a check lists them
    /// to report each damaged record on its own).
    func instanceIDs() throws(StorageFailure) -> [String]
    /// Gives the instance to `claim`, unless it is held by a claim for which `takingOverIf`
    /// returns false (a live host); a released instance (``InstanceClaim/none``) is always given.
    func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome
    /// Clears `claim` from the instance if it still holds it.
    func release(id: String, claim: InstanceClaim) throws(StorageFailure)
    /// The ids of the running instances a service of this process should run now, when the
    /// backend decides who takes over what (see the extension's default).
    func instancesAwaitingHost(supporting: SupportedCodeVersions) throws(StorageFailure) -> [String]?
    /// The ids of the running instances this process holds that another live host should run
    /// now, when the backend spreads instances over hosts (see the extension's default).
    func instancesToHandOver() throws(StorageFailure) -> [String]
    /// Sets the instance's status (keeping everything else) and its `failure` (why it failed,
    /// with `failed`; cleared with any other status); `nil` when there is no such instance.
    func setStatus(id: String, to status: InstanceStatus, at time: Int64, failure: String?) throws(StorageFailure) -> StoredInstance?
    /// Deletes the instance: its index record, log and snapshots. Whether it existed.
    func delete(id: String) throws(StorageFailure) -> Bool

    // MARK: Commits

    /// How many ``commit(_:)`` calls the backend takes at once, from different threads, for
    /// different instances: 1 where writes are serial anyway (LMDB); more where a commit is a
    /// round trip to a server, so that one commit's wait overlaps the next one's.
    var concurrentCommits: Int { get }
    /// How many calls of any kind (claims, reads, commits) the backend serves at once, from
    /// different threads: `resumeAll` resumes that many instances at once. At least
    /// ``concurrentCommits`` (the default).
    var concurrentCalls: Int { get }

    /// Applies `request` atomically: every instance's changes that are not refused, or none.
    /// Returns an outcome per ``CommitRequest/changes`` element, in order. Throws when the
    /// transaction failed as a whole (nothing of it is written).
    func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome]
    /// Whether ``commit(_:pullingMore:)`` writes each part as it is pulled (LMDB: into its open
    /// write transaction), so that a committer does well to hand parts over while its round
    /// gathers. Where it does not (the default), the parts are only merged, and a committer
    /// gathers before its round instead.
    var writesPartsAsPulled: Bool { get }
    /// Applies `request` and each part `more` returns, until it returns `nil`, as one atomic
    /// commit, like ``commit(_:)`` applied to all of them merged: an outcome per change of every
    /// part, in order; the strongest durability any part asks for. `more` runs on the calling
    /// thread before the commit (it may wait for parts to come); no instance is in two parts.
    /// A backend that runs its transaction again (LMDB, after growing its map) writes the parts
    /// already pulled again without calling `more` for them.
    func commit(_ request: CommitRequest, pullingMore more: () -> CommitRequest?) throws(StorageFailure) -> [CommitOutcome]
    /// Makes every commit so far durable (those made with ``CommitDurability/processCrashSafe``).
    func sync() throws(StorageFailure)
    /// Asks the backend to make `processCrashSafe` commits durable at least every `interval`
    /// from now on (once asked, it keeps doing so while the store is open).
    func syncPeriodically(every interval: Duration)

    // MARK: Reads

    /// Calls `visit` with the sequence and bytes of each stored entry of instance `key` from
    /// `from` through `through`, in order, until it returns false. Bytes are valid only during
    /// the call (a backend may hand out its own pages). A backend does not check that sequences
    /// are dense: the caller does.
    func readEntries(
        of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws
    /// Calls `visit` with the snapshots of instance `key` at or below `sequence`, newest first,
    /// until it returns false.
    func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
    /// What a resume reads before it replays, where a backend can read it at once (one round
    /// trip to a server): the newest snapshot of instance `key` at or below `sequence`, and up to
    /// `limit` entries after it (from sequence 1 without one), no further than `sequence`. The
    /// entries stop before the first one missing or unreadable; the caller reads on from there
    /// (and reports what it finds). The default reads them with ``readSnapshots(of:atMost:_:)``
    /// and ``readEntries(of:from:through:_:)``.
    func readTail(of key: UInt64, through sequence: UInt64, limit: Int) throws -> LogTail
    /// Stores a snapshot of instance `id` taken outside a commit (by a tool), raising its
    /// `lastSnapshot` if it is newer.
    func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure)

    // MARK: Control requests (rule O2)

    /// Records each of `requests` as the next request of its instance (numbered from 1: a number
    /// becomes visible only after every lower one of its instance), all in one transaction, and
    /// returns each as stored, or `nil` for one whose instance does not exist.
    func postControlRequests(_ requests: [NewControlRequest]) throws(StorageFailure) -> [StoredControlRequest?]
    /// The requests nobody has answered yet, by instance id, then number.
    func pendingControlRequests() throws(StorageFailure) -> [StoredControlRequest]
    /// The requests of instance `id` (answered or not) that the store keeps, by number.
    func controlRequests(of id: String) throws(StorageFailure) -> [StoredControlRequest]
    /// Answers request `number` of instance `id` unless it was answered: whether this call did.
    func answerControlRequest(instance id: String, number: UInt64, answer: ControlAnswerRecord) throws(StorageFailure) -> Bool
    /// Whether the host that holds `instance` (as read) is alive, where the backend knows better
    /// than the claim's process (PostgreSQL: hosts of other machines, by their leases); `nil`
    /// (the default) leaves it to the engine (the claim's process).
    func holderIsAlive(_ instance: StoredInstance) throws(StorageFailure) -> Bool?

    // MARK: Signals

    /// The store's signals (opened or created at the first call; the same object afterwards).
    func signalStorage() throws(StorageFailure) -> any SignalStorage

    // MARK: Operations

    /// Counts and sizes.
    func statistics() throws(StorageFailure) -> StorageStatistics
    /// Reads every record of the store's own structures and reports what is damaged (the
    /// engine then checks each instance's entries and snapshots). `progress` is told what is read
    /// next, before it is read.
    func checkStructure(progress: (String) -> Void) -> [StoreDamage]
    /// Writes a compact, consistent copy of the whole store to `destination`.
    func copy(to destination: String) throws(StorageFailure)
    /// Reads every page of the store in a child process, as `policy` says (see
    /// ``PageWalkPolicy``): where a damaged page can stop the process that reads it (LMDB), the
    /// child stops instead and the walk reports it. The default: ``PageWalkOutcome/notNeeded``.
    func walkPages(_ policy: PageWalkPolicy) -> PageWalkOutcome
    /// Lets go of what the backend holds (connections, a host's lease, an open LMDB environment,
    /// an in-memory store's contents) at once, whoever still holds the backend; every call that
    /// would reach the store after this fails with ``StorageFailure/Kind/closed`` (the contract
    /// suite checks it), and a
    /// second close does nothing. The default does nothing: a backend of a user's own that keeps
    /// nothing open may leave it out.
    func close()
}

extension StorageBackend {
    /// The ids of the running instances a service of this process should run now, where the
    /// backend decides who takes over what (PostgreSQL: those of expired hosts and unclaimed
    /// ones, spread over the live hosts that run their code version); `nil` (the default) when
    /// the engine decides from the instances' claims (a claim whose process is gone).
    public func instancesAwaitingHost(supporting: SupportedCodeVersions) throws(StorageFailure) -> [String]? { nil }

    /// The ids of the running instances this process holds that another live host should run
    /// now, where the backend spreads instances over hosts (PostgreSQL: those the spread gives a
    /// host that joined); none (the default) where one process runs a store's instances.
    public func instancesToHandOver() throws(StorageFailure) -> [String] { [] }

    public func holderIsAlive(_ instance: StoredInstance) throws(StorageFailure) -> Bool? { nil }

    /// Counted from ``instances()``: right for a backend that holds its instances in memory.
    public func instanceSummary() throws(StorageFailure) -> InstanceSummary {
        var summary = InstanceSummary()
        for instance in try instances() { summary.add(instance) }
        return summary
    }

    /// A page cut from ``instances()``: right for a backend that holds its instances in memory,
    /// a whole read of the others for one that does not (LMDB and PostgreSQL read one page).
    public func instances(after: String?, limit: Int) throws(StorageFailure) -> [StoredInstance] {
        func bytes(_ id: String) -> [UInt8] { Array(id.utf8) }
        let after = after.map(bytes)
        return Array(try instances()
            .filter { after?.lexicographicallyPrecedes(bytes($0.id)) ?? true }
            .sorted { bytes($0.id).lexicographicallyPrecedes(bytes($1.id)) }
            .prefix(max(0, limit)))
    }

    /// A backend of a user's own that keeps no control requests refuses them (the contract suite
    /// checks the built-in backends' own).
    public func postControlRequests(_ requests: [NewControlRequest]) throws(StorageFailure) -> [StoredControlRequest?] {
        throw StorageFailure(kind: .other, backend: name, location: location, operation: "post control requests",
                             detail: "this backend keeps no control requests", recovery: "Implement the control requests of StorageBackend")
    }

    public func pendingControlRequests() throws(StorageFailure) -> [StoredControlRequest] { [] }

    public func controlRequests(of id: String) throws(StorageFailure) -> [StoredControlRequest] { [] }

    public func answerControlRequest(instance id: String, number: UInt64, answer: ControlAnswerRecord) throws(StorageFailure) -> Bool { false }

    /// Sets the instance's status, with no failure.
    public func setStatus(id: String, to status: InstanceStatus, at time: Int64) throws(StorageFailure) -> StoredInstance? {
        try setStatus(id: id, to: status, at: time, failure: nil)
    }

    /// One commit at a time, unless the backend says otherwise.
    public var concurrentCommits: Int { 1 }

    /// As many calls at once as commits, unless the backend says otherwise.
    public var concurrentCalls: Int { concurrentCommits }

    public var writesPartsAsPulled: Bool { false }

    /// Merges the parts into one request and commits it.
    public func commit(_ request: CommitRequest, pullingMore more: () -> CommitRequest?) throws(StorageFailure) -> [CommitOutcome] {
        var merged = request
        while let part = more() {
            merged.changes.append(contentsOf: part.changes)
            merged.durability = merged.durability.strongest(with: part.durability)
        }
        return try commit(merged)
    }

    public func close() {}

    public func walkPages(_ policy: PageWalkPolicy) -> PageWalkOutcome { .notNeeded }

    public func readTail(of key: UInt64, through sequence: UInt64, limit: Int) throws -> LogTail {
        var snapshot: LogTail.Snapshot?
        try readSnapshots(of: key, atMost: sequence) { found, bytes in
            snapshot = LogTail.Snapshot(sequence: found, bytes: Array(bytes))
            return false
        }
        var entries = LogRecords(firstSequence: (snapshot?.sequence ?? 0) + 1)
        guard entries.firstSequence <= sequence, limit > 0 else { return LogTail(snapshot: snapshot, entries: entries) }
        let last = min(sequence, entries.firstSequence + UInt64(limit) - 1)
        do {
            try readEntries(of: key, from: entries.firstSequence, through: last) { found, bytes in
                guard found == entries.lastSequence + 1 else { return false }
                entries.append(bytes)
                return true
            }
        } catch {
            // The entries read before it are returned: the caller reads on and reports it.
        }
        return LogTail(snapshot: snapshot, entries: entries)
    }
}

/// What ``StorageBackend/readTail(of:through:limit:)`` read: an instance's newest snapshot at or
/// below a sequence, and the entries after it.
public struct LogTail: Sendable {
    /// A stored snapshot: the sequence it was taken at and its bytes.
    public struct Snapshot: Sendable, Equatable {
        public var sequence: UInt64
        public var bytes: [UInt8]

        public init(sequence: UInt64, bytes: [UInt8]) {
            self.sequence = sequence
            self.bytes = bytes
        }
    }

    /// The newest snapshot at or below the sequence asked for, if any.
    public var snapshot: Snapshot?
    /// Entries from the one after the snapshot (or from 1), dense, possibly fewer than asked for.
    public var entries: LogRecords

    public init(snapshot: Snapshot?, entries: LogRecords) {
        self.snapshot = snapshot
        self.entries = entries
    }
}
