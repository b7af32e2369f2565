/// When to read every page of a store in a child process before using it: LMDB's reads happen in
/// the reading process's memory, and some damage to a page makes liblmdb itself stop that process
/// (see `StoreWalk` in the LMDB module), which a walk in a child process finds first.
public enum PageWalkPolicy: Sendable, Hashable {
    /// No walk.
    case never
    /// A walk when the store has not been walked since it was last opened by another build of the
    /// program, or since its data file was replaced (copied, restored, compacted), or ever.
    case whenUnchecked
    /// A walk every time.
    case always
}

/// What a walk of every page of a store found (``StorageBackend/walkPages(_:)``).
public enum PageWalkOutcome: Sendable {
    /// No walk was needed: the policy said so, or the backend's reads cannot stop the process
    /// (a server's store, an in-memory one).
    case notNeeded
    /// Every page read: `entries` entries in all.
    case intact(entries: UInt64)
    /// The walk found damage (a `.corrupted` failure that says where it was reading).
    case damaged(StorageFailure)
    /// The walk could not finish (it was stopped after its time, or could not start): nothing is
    /// known of the store's pages.
    case unfinished(String)
}
