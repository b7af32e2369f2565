import Foundation

/// One atomic commit: the changes of one or many instances, all made or none.
///
/// A request is plain data: a backend applies it in one transaction (one synced write for
/// ``CommitDurability/synced``) and reports an outcome per instance. An instance whose stored
/// claim is not the one its changes were made under is refused, with nothing of it written; the
/// others commit.
public struct CommitRequest: Sendable {
    /// How durable the commit must be before it returns.
    public var durability: CommitDurability
    /// The instances' changes, each instance at most once.
    public var changes: [InstanceChanges]

    public init(durability: CommitDurability, changes: [InstanceChanges] = []) {
        self.durability = durability
        self.changes = changes
    }

    /// Whether some instance's changes mark signal deliveries.
    public var hasDeliveryMarks: Bool { changes.contains { !$0.deliveryMarks.isEmpty } }
}

/// What a commit writes for one instance: entries appended to its log (continuing it densely),
/// snapshots, and the signal deliveries the entries' actions consumed.
public struct InstanceChanges: Sendable {
    /// The instance's id and key, as stored.
    public var id: String
    public var key: UInt64
    /// The claim these changes were made under: the commit is refused unless it is the stored one.
    public var claim: InstanceClaim
    /// New entries: the first one's sequence is the stored last sequence + 1.
    public var entries: LogRecords
    /// The time of the last entry (nanoseconds since 1970): the instance's new `updated`.
    public var updated: Int64
    /// Snapshots taken at some of the entries: (sequence, encoded snapshot).
    public var snapshots: [(sequence: UInt64, bytes: [UInt8])] = []
    /// Signal versions handed to the instance's workflows, marked delivered with these entries.
    public var deliveryMarks: [DeliveryMarkRecord] = []
    /// The instance's new status, set with these entries (`nil`: unchanged): a workflow that
    /// finishes is `completed` by the commit of the entry that finished it.
    public var status: InstanceStatus?

    public init(id: String, key: UInt64, claim: InstanceClaim, entries: LogRecords, updated: Int64) {
        self.id = id
        self.key = key
        self.claim = claim
        self.entries = entries
        self.updated = updated
    }
}

/// A signal version delivered to a durable consumer, committed with the action it caused.
public struct DeliveryMarkRecord: Sendable, Hashable {
    /// The consumer's id.
    public var consumer: UUID
    /// The version delivered.
    public var version: UInt64
    /// Whether the version ends the consumer (its record is removed).
    public var terminates: Bool
    /// How many of the signal's newest versions to keep when older ones are pruned.
    public var keepLatest: Int

    public init(consumer: UUID, version: UInt64, terminates: Bool, keepLatest: Int) {
        self.consumer = consumer
        self.version = version
        self.terminates = terminates
        self.keepLatest = keepLatest
    }
}

/// What became of one instance's changes in a commit.
public enum CommitOutcome: Sendable, Hashable {
    /// Written, whole. (`instance(id:)` reads the record as it now stands: a commit does not
    /// answer with it, since a database server would have to send every field of it back.)
    case committed
    /// Not written: another claim holds the instance (or it was deleted: `nil`).
    case refused(current: InstanceClaim?)
    /// Not written: a delivery mark of the changes names a version its consumer was already
    /// marked for, so the action it came with would apply that version a second time (rule S7).
    /// Nothing of the instance's changes is written.
    case alreadyDelivered(consumer: UUID, version: UInt64)
}
