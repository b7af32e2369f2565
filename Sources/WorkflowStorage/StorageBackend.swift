/// Where a ``WorkflowStore`` keeps its instances: the index, each instance's log and snapshots,
/// in the engine's terms. LMDB (the embedded default) and an in-memory store implement it; every
/// implementation passes the same contract suite.
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
    /// The id of every instance, in order, without reading their records (a check lists them
    /// to report each damaged record on its own).
    func instanceIDs() throws(StorageFailure) -> [String]
    /// Gives the instance to `claim`, unless it is held by a claim for which `takingOverIf`
    /// returns false (a live host); a released instance (``InstanceClaim/none``) is always given.
    func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome
    /// Clears `claim` from the instance if it still holds it.
    func release(id: String, claim: InstanceClaim) throws(StorageFailure)
    /// Sets the instance's status (keeping everything else); `nil` when there is no such instance.
    func setStatus(id: String, to status: InstanceStatus, at time: Int64) throws(StorageFailure) -> StoredInstance?
    /// Deletes the instance: its index record, log and snapshots. Whether it existed.
    func delete(id: String) throws(StorageFailure) -> Bool

    // MARK: Commits

    /// How many ``commit(_:)`` calls the backend takes at once, from different threads, for
    /// different instances: 1 where writes are serial anyway (LMDB); more where a commit is a
    /// round trip to a server, so that one commit's wait overlaps the next one's.
    var concurrentCommits: Int { get }

    /// Applies `request` atomically: every instance's changes that are not refused, or none.
    /// Returns an outcome per ``CommitRequest/changes`` element, in order. Throws when the
    /// transaction failed as a whole (nothing of it is written).
    func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome]
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
    /// Stores a snapshot of instance `id` taken outside a commit (by a tool), raising its
    /// `lastSnapshot` if it is newer.
    func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure)

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
    /// Lets go of what the backend holds beyond memory (connections, a host's lease) once no
    /// host runs; calls after this may fail. The default does nothing: an LMDB environment is
    /// closed when its last reference goes.
    func close()
}

extension StorageBackend {
    /// One commit at a time, unless the backend says otherwise.
    public var concurrentCommits: Int { 1 }

    public func close() {}
}
