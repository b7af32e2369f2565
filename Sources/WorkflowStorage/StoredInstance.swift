/// An instance as the store's index holds it: updated in the same transaction as every commit
/// of its log.
public struct StoredInstance: Sendable, Hashable {
    /// The id it was started with (1 to 400 bytes of UTF-8).
    public var id: String
    /// The backend's number for the instance, assigned at creation and stable for its life.
    /// Commits and reads name the instance by it.
    public var key: UInt64
    /// The root workflow's type name.
    public var workflowType: String
    /// The name of the codec its payloads and states are written with.
    public var codec: String
    /// Its status.
    public var status: InstanceStatus
    /// When it was created, in nanoseconds since 1970.
    public var created: Int64
    /// When its log last grew or its status changed, in nanoseconds since 1970.
    public var updated: Int64
    /// The sequence of its last log entry (sequences are dense, from 1).
    public var lastSequence: UInt64
    /// The sequence of its latest snapshot, 0 when none.
    public var lastSnapshot: UInt64
    /// Who runs it.
    public var claim: InstanceClaim
    /// The code version it started under, fixed at creation (`nil`: none was configured).
    public var codeVersion: String?
    /// Why it is `failed` (the error's kind, a colon, its description), set with that status.
    public var failure: String?

    public init(
        id: String, key: UInt64, workflowType: String, codec: String, status: InstanceStatus, created: Int64, updated: Int64,
        lastSequence: UInt64, lastSnapshot: UInt64, claim: InstanceClaim, codeVersion: String? = nil, failure: String? = nil
    ) {
        self.codeVersion = codeVersion
        self.failure = failure
        self.id = id
        self.key = key
        self.workflowType = workflowType
        self.codec = codec
        self.status = status
        self.created = created
        self.updated = updated
        self.lastSequence = lastSequence
        self.lastSnapshot = lastSnapshot
        self.claim = claim
    }
}

/// A new instance, created with its first entries in one transaction.
public struct NewInstance: Sendable {
    public var id: String
    public var workflowType: String
    public var codec: String
    public var status: InstanceStatus
    /// Nanoseconds since 1970.
    public var created: Int64
    /// The claim it starts under (``InstanceClaim/none`` for an import).
    public var claim: InstanceClaim
    /// Its log: sequences 1 to n, at least one.
    public var entries: LogRecords
    /// The code version it starts under (`nil`: none).
    public var codeVersion: String?

    public init(
        id: String, workflowType: String, codec: String, status: InstanceStatus, created: Int64, claim: InstanceClaim, entries: LogRecords,
        codeVersion: String? = nil
    ) {
        self.codeVersion = codeVersion
        self.id = id
        self.workflowType = workflowType
        self.codec = codec
        self.status = status
        self.created = created
        self.claim = claim
        self.entries = entries
    }
}

/// What ``StorageBackend/claim(id:as:takingOverIf:)`` found.
public enum ClaimOutcome: Sendable, Hashable {
    /// The instance is now held by the new claim; the record as stored.
    case claimed(StoredInstance)
    /// A claim the caller did not let go of holds it.
    case held(by: InstanceClaim)
    /// No instance has this id.
    case notFound
}
