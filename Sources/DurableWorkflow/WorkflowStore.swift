import LMDB
import Synchronization
import Workflow
import WorkflowLocks

/// How a ``WorkflowStore`` is opened.
public struct StoreConfiguration: Sendable {
    /// The LMDB environment underneath (map size limits, readers, read-only).
    public var environment: EnvironmentConfiguration

    /// Defaults: a map starting at 64 MiB and growing to 1 TiB, 126 readers.
    public init(environment: EnvironmentConfiguration = EnvironmentConfiguration()) {
        self.environment = environment
    }

    /// A read-only store (for inspection tools): every write fails.
    public static var readOnly: StoreConfiguration {
        StoreConfiguration(environment: EnvironmentConfiguration(readOnly: true))
    }
}

/// One LMDB environment holding many workflow instances, each with its own log (rule D6).
///
/// Start an instance with ``start(_:id:configuration:)``; after a restart, ``resume(id:as:configuration:)``
/// rebuilds its state by replaying its log (from its latest snapshot) and then starts its workers
/// and side effects. List, complete and delete instances through the index, which is updated in the
/// same transaction as each log commit.
public final class WorkflowStore: Sendable {
    /// The store's directory.
    public let path: String
    /// The LMDB environment underneath (shared with the signal subsystem).
    package let environment: Environment
    let layout: StoreLayout
    /// Commits every instance's batches, merging whatever waits into one transaction.
    let pipeline = CommitPipeline()
    private let syncTask = Lock<Task<Void, Never>?>(nil)

    /// The store format this library writes (rule B1: a newer one is refused, an older one migrated).
    public static let formatVersion: UInt32 = 1

    /// The declared, ordered upgrades from older formats (none yet: format 1 is the first).
    static let migrations: [StoreMigration] = []

    private init(path: String, environment: Environment, layout: StoreLayout) {
        self.path = path
        self.environment = environment
        self.layout = layout
    }

    deinit {
        syncTask.withLock { $0?.cancel() }
    }

    /// Opens (or creates) the store at `path`, checking its format version.
    ///
    /// A path this process already has open is shared with the same configuration, and is a
    /// storage error with another one until every reference to the open store is gone (a
    /// stopped host's commit and drain threads drop theirs moments after it stops).
    public static func open(path: String, configuration: StoreConfiguration = StoreConfiguration()) throws(DurableError) -> WorkflowStore {
        do {
            let environment = try Environment.open(path: path, configuration: configuration.environment)
            // The format first: a newer store may have databases this version does not know.
            let meta: Database<String, [UInt8]> = try environment.database(named: "meta")
            try checkFormat(environment: environment, meta: meta, path: path, readOnly: configuration.environment.readOnly)
            return WorkflowStore(path: path, environment: environment, layout: try StoreLayout(environment: environment))
        } catch let error as DurableError {
            throw error
        } catch let error as LMDBError {
            if error.kind == .databaseNotFound {
                throw DurableError(.storage, store: path, detail: "the directory holds an LMDB environment that is not a workflow store",
                                   recovery: "Check the path", storageFailure: error.storageFailure)
            }
            throw DurableError.storage(error, store: path)
        } catch {
            throw DurableError(.storage, store: path, detail: "\(error)")
        }
    }

    private static func checkFormat(environment: Environment, meta: Database<String, [UInt8]>, path: String, readOnly: Bool) throws {
        let stored = try environment.read { txn in
            try txn.withValue(forKey: "format", in: meta) { $0.count == 4 ? $0.loadUnaligned(as: UInt32.self).littleEndian : 0 }
        }
        switch stored {
        case nil:
            guard !readOnly else {
                throw DurableError(.storage, store: path, detail: "the store has never been written", recovery: "Open it writable once")
            }
            try environment.write { txn in
                var format = formatVersion.littleEndian
                try txn.put(withUnsafeBytes(of: &format) { Array($0) }, forKey: "format", in: meta)
            }
        case let version? where version > formatVersion:
            throw DurableError(
                .newerFormat, store: path,
                detail: "the store has format \(version), written by a newer version of this library (this one reads up to \(formatVersion))",
                recovery: "Upgrade the library, or export the store with the newer version's wfctl and import it here")
        case let version? where version < formatVersion:
            guard !readOnly else {
                throw DurableError(.storage, store: path, detail: "the store has the older format \(version)",
                                   recovery: "Open it writable once to migrate it to format \(formatVersion)")
            }
            // Opened before the migrations' transaction: opening a database takes a write
            // transaction of its own, which would wait forever inside another one.
            let layout = try StoreLayout(environment: environment)
            try environment.write { txn in
                for migration in migrations where migration.from >= version { try migration.apply(txn, layout) }
                var format = formatVersion.littleEndian
                try txn.put(withUnsafeBytes(of: &format) { Array($0) }, forKey: "format", in: meta)
            }
        default:
            break
        }
    }

    /// The root path of a tree whose root workflow is of `type`.
    static func rootPath(of type: Any.Type) -> NodePath {
        NodePath(segments: [.init(workflowType: String(reflecting: type), key: "")])
    }

    /// Starts (once) a task that flushes `processCrashSafe` commits to disk every `interval`.
    func scheduleBackgroundSync(every interval: Duration) {
        syncTask.withLock { task in
            guard task == nil else { return }
            let environment = self.environment
            task = Task.detached {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    try? environment.sync(force: true)
                }
            }
        }
    }

    /// Flushes every commit made so far to disk (useful with `processCrashSafe` before shutdown).
    public func sync() throws(DurableError) {
        do { try environment.sync(force: true) } catch { throw DurableError.storage(error, store: path) }
    }

    /// Facts about the store: LMDB map size and use, readers, and counts.
    public func statistics() throws -> StoreStatistics {
        let info = environment.info()
        return try storageCall(instance: nil) {
            try environment.read { txn in
                let instances = try txn.count(of: layout.instances)
                return StoreStatistics(
                    formatVersion: Self.formatVersion, mapSize: info.mapSize, usedBytes: info.usedBytes,
                    readersInUse: info.readersInUse, maxReaders: info.maxReaders,
                    // The log also holds one index state record per instance.
                    instances: instances, logEntries: try txn.count(of: layout.log) - instances,
                    snapshots: try txn.count(of: layout.snapshots), lastTransactionID: info.lastTransactionID)
            }
        }
    }
}

/// A declared, named upgrade of the store format, applied in order at open.
struct StoreMigration: Sendable {
    let name: String
    let from: UInt32
    let apply: @Sendable (borrowing WriteTransaction, StoreLayout) throws -> Void
}

/// What ``WorkflowStore/statistics()`` reports.
public struct StoreStatistics: Sendable, Codable {
    public let formatVersion: UInt32
    public let mapSize: Int
    public let usedBytes: Int
    public let readersInUse: Int
    public let maxReaders: Int
    public let instances: Int
    public let logEntries: Int
    public let snapshots: Int
    public let lastTransactionID: UInt64
}
