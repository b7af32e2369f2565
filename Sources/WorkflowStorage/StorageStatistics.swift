/// Facts a backend reports about its store.
public struct StorageStatistics: Sendable, Hashable, Codable {
    /// The backend's name (`"LMDB"`, `"memory"`).
    public var backend: String
    /// The store's format version.
    public var formatVersion: UInt32
    public var instances: Int
    public var logEntries: Int
    public var snapshots: Int
    /// Bytes the store may grow to (LMDB: the map size), when it has such a limit.
    public var capacityBytes: Int?
    /// Bytes in use, when known.
    public var usedBytes: Int?
    /// Reader slots in use and available, when the backend has them.
    public var readersInUse: Int?
    public var maxReaders: Int?
    /// The id of the last committed transaction, when the backend numbers them.
    public var lastTransactionID: UInt64?

    public init(
        backend: String, formatVersion: UInt32, instances: Int, logEntries: Int, snapshots: Int, capacityBytes: Int? = nil,
        usedBytes: Int? = nil, readersInUse: Int? = nil, maxReaders: Int? = nil, lastTransactionID: UInt64? = nil
    ) {
        self.backend = backend
        self.formatVersion = formatVersion
        self.instances = instances
        self.logEntries = logEntries
        self.snapshots = snapshots
        self.capacityBytes = capacityBytes
        self.usedBytes = usedBytes
        self.readersInUse = readersInUse
        self.maxReaders = maxReaders
        self.lastTransactionID = lastTransactionID
    }
}

/// One finding of a walk over a whole store: what is damaged and where.
public struct StoreDamage: Sendable, Hashable, Codable {
    /// The part of the store: `"log"`, `"snapshots"`, `"instances"` or `"meta"`.
    public let area: String
    /// The instance, when one is concerned.
    public let instance: String?
    /// The log or snapshot sequence, when one is concerned.
    public let sequence: UInt64?
    /// What was found.
    public let detail: String

    /// A finding (tools that check a store in another process make them too).
    public init(area: String, instance: String?, sequence: UInt64?, detail: String) {
        self.area = area
        self.instance = instance
        self.sequence = sequence
        self.detail = detail
    }
}
