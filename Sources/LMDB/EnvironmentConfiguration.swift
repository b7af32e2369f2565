/// How an ``Environment`` is opened: one value, passed once, with documented defaults.
public struct EnvironmentConfiguration: Sendable, Hashable {
    /// How much of each commit reaches the disk before `commit` returns.
    public enum Durability: Sendable, Hashable {
        /// Two flushes per commit (data, then meta page): survives power loss. LMDB's default.
        case strict
        /// One flush per commit (`MDB_NOMETASYNC`): an OS crash may lose the last commit,
        /// never corrupt the store.
        case noMetaSync
        /// No flush (`MDB_NOSYNC`): survives a crash of the process, not of the machine.
        /// Call ``Environment/sync(force:)`` to flush.
        case noSync
    }

    /// Map size to start with, in bytes. The map grows on demand (doubling) up to `maximumMapSize`.
    public var initialMapSize: Int = 64 << 20
    /// The largest the map may grow to, in bytes; a write past it fails with ``LMDBError/Kind/mapFull``.
    public var maximumMapSize: Int = 1 << 40
    /// How many named databases the environment can hold.
    public var maxDatabases: Int = 32
    /// How many concurrent read transactions (across all processes) the environment allows.
    public var maxReaders: Int = 254
    /// Commit durability; see ``Durability``.
    public var durability: Durability = .strict
    /// Open for reading only: every write fails with ``LMDBError/Kind/readOnly``.
    public var readOnly: Bool = false
    /// Create the store directory if it is missing (its parent must exist).
    public var createDirectoryIfMissing: Bool = true
    /// Permission bits for files LMDB creates.
    public var fileMode: UInt32 = 0o644
    /// How long a write waits for the store's writer (held by another process, or by another
    /// thread of this one) before it fails with ``LMDBError/Kind/writerBusy``, naming the holder.
    /// LMDB itself would wait without end, also behind a stopped process.
    public var writerWait: Duration = .seconds(10)
    /// How long a write transaction may stay open, or a write wait for another process's, before
    /// it is reported as slow (``Environment/reportSlowWrites(_:)``; a `WorkflowStore` logs it).
    public var slowWrite: Duration = .seconds(1)

    /// The defaults: 64 MiB map growing to 1 TiB, 32 databases, 254 readers, strict durability,
    /// writes waiting at most 10 s for the writer.
    public init() {}

    /// A configuration with the given overrides of the defaults.
    public init(
        initialMapSize: Int = 64 << 20,
        maximumMapSize: Int = 1 << 40,
        maxDatabases: Int = 32,
        maxReaders: Int = 254,
        durability: Durability = .strict,
        readOnly: Bool = false,
        createDirectoryIfMissing: Bool = true,
        writerWait: Duration = .seconds(10),
        slowWrite: Duration = .seconds(1)
    ) {
        self.initialMapSize = initialMapSize
        self.maximumMapSize = maximumMapSize
        self.maxDatabases = maxDatabases
        self.maxReaders = maxReaders
        self.durability = durability
        self.readOnly = readOnly
        self.createDirectoryIfMissing = createDirectoryIfMissing
        self.writerWait = writerWait
        self.slowWrite = slowWrite
    }
}
