/// A failure of the store underneath the engine, in the engine's terms: what kind of failure,
/// where and during what, what to do about it, and the backend's own error for the detail.
///
/// Engine errors (`DurableError`, `SignalError`) carry one as `storageFailure` when their kind is
/// `.storage`, so that code handling them names no backend's types. Match with
/// `switch failure.kind` or `catch StorageFailure.Kind.full`.
public struct StorageFailure: Error, Sendable, CustomStringConvertible {
    /// The categories of failure a caller can act on differently, whatever the backend.
    public enum Kind: Sendable, Hashable {
        /// The store (its directory, file or a part of it) does not exist.
        case notFound
        /// The location holds something that is not a store of this backend.
        case notAStore
        /// The store cannot be written: permissions, a read-only file system, or opened read-only.
        case readOnly
        /// The store reached its size limit, or the disk is full; nothing of the failed write was kept.
        case full
        /// The store's own structures are damaged: restore it from a copy.
        case corrupted
        /// The store was written by an incompatible version or configuration of the backend.
        case incompatible
        /// The store's format is newer than this library reads: upgrade the library.
        case newerFormat
        /// A resource is taken: the store is open with another configuration, or every reader
        /// slot or connection is in use.
        case busy
        /// The store's one writer stayed taken for as long as the call may wait for it (LMDB:
        /// `writerWait`): by another process (stopped, or writing at length) or by a long write of
        /// this one. The detail names the holder and its state; nothing of the call was written.
        case storeBusy
        /// The store's server cannot be reached (it is down, or the network is): retry later.
        case unavailable
        /// The store was closed in this process (`WorkflowStore.close()`): open it again to use it.
        case closed
        /// A key or value the backend cannot store (too long, empty, out of order).
        case invalidInput
        /// Anything else; see `underlying`.
        case other

        /// Lets `catch StorageFailure.Kind.full` match a failure of that kind.
        public static func ~= (pattern: Kind, value: any Error) -> Bool {
            (value as? StorageFailure)?.kind == pattern
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// The backend that reported it (`"LMDB"`).
    public let backend: String
    /// Where: the store's path or address.
    public let location: String
    /// The operation that failed, e.g. `"open"`, `"commit"`.
    public let operation: String
    /// A one-line explanation of the cause.
    public let detail: String
    /// What the caller or operator can do about it.
    public let recovery: String
    /// The backend's own error, for its codes and detail.
    public let underlying: (any Error & Sendable)?

    public init(
        kind: Kind, backend: String, location: String, operation: String, detail: String, recovery: String,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = kind
        self.backend = backend
        self.location = location
        self.operation = operation
        self.detail = detail
        self.recovery = recovery
        self.underlying = underlying
    }

    /// What failed and where, without the recovery: `"<backend> <operation> failed at <location>: <detail>"`.
    public var summary: String { "\(backend) \(operation) failed at \(location): \(detail)" }

    /// The summary, then the recovery.
    public var description: String { recovery.isEmpty ? summary : "\(summary). \(recovery)" }
}
