import Dispatch
import LMDB
import Synchronization
import WorkflowLocks
import WorkflowStorage

/// The embedded default backend: one LMDB environment (a directory with `data.mdb` and
/// `lock.mdb`) shared by every process that opens it. Commits are LMDB write transactions
/// (one writer at a time across processes); reads are MVCC snapshots that never block it.
///
/// Layout (`StoreLayout`): `meta` (format, next instance key), `instances` (id → the static part
/// of the index record), `state` (instance key → its mutable part), `log` ((instance key,
/// sequence) → entry bytes, or where a checkpoint put them), `journal` (entries of commits that
/// carried many instances, until a checkpoint moves them), `archive` (the entries checkpoints
/// moved, by generation), `snapshots` ((key, sequence) → snapshot bytes); the signal subsystem
/// keeps its databases in the same environment.
public final class LMDBStorage: StorageBackend {
    public let name = "LMDB"
    public var location: String { environment.path }
    public var isDurable: Bool { true }
    public var isReadOnly: Bool { environment.configuration.readOnly }

    /// The environment underneath (the signal storage shares it).
    package let environment: Environment
    package let layout: StoreLayout
    /// Whether a walk of every page was due when the store was opened (see ``PageWalkRecord``),
    /// until one is made.
    let pageWalkDue = Atomic<Bool>(false)
    /// The store's signals, opened at the first use.
    private let signals = Lock<LMDBSignalStorage?>(nil)
    private let syncTask = Lock<Task<Void, Never>?>(nil)
    /// Instances' ids by key, as commits found them in `instances` (neither ever changes). Only
    /// write transactions, one at a time, use it: a commit's holds it while it runs.
    let knownIDs = Lock(InstanceKeyTable<String>())
    /// Each instance's last journal entry, as this storage's write transactions keep track of them.
    let journalTails = Lock(JournalTails())
    /// The newest view of the journal's tails this storage has for read transactions (see
    /// ``JournalTailsSnapshot``).
    let publishedTails = Lock<JournalTailsSnapshot?>(nil)
    /// Whether a read asked for ``publishedTails`` since a commit last published them: only then
    /// does a commit publish its own (which costs its next commit a copy of the tails).
    let tailsAsked = Atomic<Bool>(false)
    /// How many journal entries this storage has read in searches for one instance's entries
    /// there (its last one, or all of them to delete them) and in keeping ``journalTails`` up to
    /// date: a diagnostic (tests check that it follows the journal's length, not instances times
    /// it).
    package let journalEntriesRead = Atomic<Int>(0)
    /// The records this storage's last commit left, for the next one (see ``StateCache``).
    let stateCache = Lock(StateCache())
    /// This storage's checkpoint copy of the journal, kept between checkpoints and read ahead of
    /// the next (see ``JournalCopies``).
    let journalCopies = Lock(JournalCopies())
    /// Where the journal is read ahead of a checkpoint.
    let readingAhead = DispatchQueue(label: "WorkflowLMDB.journal-copy")
    /// When a commit moves the journal into the archive.
    package let checkpoints: JournalCheckpoints

    /// The format this library writes (a newer one is refused, an older one migrated).
    public static let formatVersion: UInt32 = 10

    /// The declared, ordered upgrades from older formats.
    static let migrations: [Migration] = [
        // Format 1 kept each instance's mutable index record in `log`, after its entries.
        Migration(name: "index state moves from log to state", from: 1) { txn, layout in
            var moved: [(UInt64, [UInt8])] = []
            try txn.forEach(in: layout.log) { key, value in
                let logKey = try LogKey(lmdbBytes: key)
                if logKey.sequence == IndexRecord.formatOneStateSequence { moved.append((logKey.instance, Array(value))) }
                return true
            }
            for (instance, bytes) in moved {
                try txn.put(bytes, forKey: instance, in: layout.state)
                try txn.delete(LogKey(instance: instance, sequence: IndexRecord.formatOneStateSequence), in: layout.log)
            }
        },
        // Format 3 may hold signal versions with a trace context (a version record's format 2),
        // which a library that reads up to format 2 would skip: it must refuse the store instead.
        // Nothing stored changes.
        Migration(name: "signal versions may carry a trace context", from: 2) { _, _ in },
        // Format 4 journal values carry their commit's time, and a commit may leave the state
        // record of an instance with journal entries as it was (its last one says the rest).
        Migration(name: "journal entries carry their commit's time", from: 3) { txn, layout in
            try addCommitTimes(txn, layout)
        },
        // Format 5 checkpoints append the journal's entries to `archive` and leave a segment
        // record in `log`, which a library that reads up to format 4 would take for an entry: it
        // must refuse the store instead. Nothing stored changes (`archive` is created at open).
        Migration(name: "checkpoints move the journal into the archive", from: 4) { _, _ in },
        // Format 6 archives chunks of an instance's entries, which a library that reads up to
        // format 5 would take for single entries: it must refuse the store instead. The archive's
        // count of entries is kept in `meta` (format 5's values were one entry each).
        Migration(name: "checkpoints archive chunks of entries", from: 5) { txn, layout in
            try countArchivedEntries(txn, layout)
        },
        // Format 7 archives chunks of differences between consecutive entries under segment
        // records of a new marker, which a library that reads up to format 6 would take for entry
        // records: it must refuse the store instead. Nothing stored changes (format 6's segment
        // records keep their marker).
        Migration(name: "checkpoints archive each entry as its difference from the one before", from: 6) { _, _ in },
        // Format 8 leaves a deleted instance's journal entries for the next checkpoint to drop
        // and counts them in `meta`; a library that reads up to format 7 would archive them
        // under the deleted instance and count them among the store's entries: it must refuse
        // the store instead. Nothing stored changes.
        Migration(name: "deleted instances leave their journal entries to the next checkpoint", from: 7) { _, _ in },
        // Format 9 entries and snapshots may carry version markers and state versions (entry
        // format 3, snapshot format 3), and index records a code version (static part version
        // 3), which a library that reads up to format 8 would take for damage: it must refuse the
        // store instead. Nothing stored changes.
        Migration(name: "entries, snapshots and instances may carry code versions", from: 8) { _, _ in },
        // Format 10 keeps control requests in `control` (created at open), logs control entries
        // (origin 6) and snapshots of format 4, and has the statuses paused (4) and terminated
        // (5), which a library that reads up to format 9 would take for damage: it must refuse
        // the store instead. Nothing stored changes.
        Migration(name: "control requests, control entries, paused and terminated instances", from: 9) { _, _ in },
    ]

    /// A declared, named upgrade of the store format, applied in order at open.
    struct Migration: Sendable {
        let name: String
        let from: UInt32
        let apply: @Sendable (borrowing WriteTransaction, StoreLayout) throws -> Void
    }

    private init(environment: Environment, layout: StoreLayout, checkpoints: JournalCheckpoints) {
        self.environment = environment
        self.layout = layout
        self.checkpoints = checkpoints
    }

    deinit {
        syncTask.withLock { $0?.cancel() }
    }

    public func walkPages(_ policy: PageWalkPolicy) -> PageWalkOutcome {
        let outcome = PageWalkRecord.walk(location, policy: policy, due: pageWalkDue.load(ordering: .relaxed))
        if case .intact = outcome { pageWalkDue.store(false, ordering: .relaxed) }
        return outcome
    }

    /// Opens (or creates) the store at `path`, checking its format. A path this process has open
    /// already is shared with the same configuration, and is a `.busy` failure with another one.
    public static func open(path: String, configuration: EnvironmentConfiguration = EnvironmentConfiguration()) throws(StorageFailure) -> LMDBStorage {
        try open(path: path, configuration: configuration, checkpoints: .standard)
    }

    /// As ``open(path:configuration:)``, with the journal checkpointed at `checkpointEntries`
    /// entries however many instances they are of (tests make checkpoints frequent).
    package static func open(
        path: String, configuration: EnvironmentConfiguration, checkpointEntries: Int
    ) throws(StorageFailure) -> LMDBStorage {
        try open(path: path, configuration: configuration, checkpoints: .every(checkpointEntries))
    }

    /// As ``open(path:configuration:)``, with the journal checkpointed as `checkpoints` say.
    package static func open(
        path: String, configuration: EnvironmentConfiguration, checkpoints: JournalCheckpoints
    ) throws(StorageFailure) -> LMDBStorage {
        do {
            // Read before the open creates a data file or records this program's open.
            let existed = PageWalkRecord.dataFile(in: path) != nil
            let walkDue = PageWalkRecord.read(in: path).isDue(in: path)
            let environment = try Environment.open(path: path, configuration: configuration)
            let slowWrites = SlowWriteLog(store: path)
            environment.reportSlowWrites { slowWrites.report($0) }
            // The format first: a newer store may have databases this version does not know.
            let meta: Database<String, [UInt8]> = try environment.database(named: "meta")
            try checkFormat(environment: environment, meta: meta, readOnly: configuration.readOnly)
            let storage = LMDBStorage(environment: environment, layout: try StoreLayout(environment: environment), checkpoints: checkpoints)
            // Written once, complete: a store any writer made (an import, a service without
            // signals) has its signal tables, so tools open its signals read-only.
            if !configuration.readOnly {
                _ = try storage.signalLayout()
                PageWalkRecord.recordOpen(in: path, created: !existed)
            }
            storage.pageWalkDue.store(walkDue, ordering: .relaxed)
            return storage
        } catch let failure as StorageFailure {
            throw failure
        } catch let error as LMDBError where error.kind == .databaseNotFound {
            throw StorageFailure(kind: .notAStore, backend: "LMDB", location: path, operation: "open",
                                 detail: "the directory holds an LMDB environment that is not a workflow store", recovery: "Check the path",
                                 underlying: error)
        } catch let error as LMDBError {
            throw error.storageFailure
        } catch {
            throw StorageFailure(kind: .other, backend: "LMDB", location: path, operation: "open", detail: "\(error)", recovery: "")
        }
    }

    private static func checkFormat(environment: Environment, meta: Database<String, [UInt8]>, readOnly: Bool) throws {
        let stored = try environment.read { txn in
            try txn.withValue(forKey: "format", in: meta) { $0.count == 4 ? $0.loadUnaligned(as: UInt32.self).littleEndian : 0 }
        }
        func failure(_ kind: StorageFailure.Kind, _ detail: String, _ recovery: String) -> StorageFailure {
            StorageFailure(kind: kind, backend: "LMDB", location: environment.path, operation: "open", detail: detail, recovery: recovery)
        }
        switch stored {
        case nil:
            guard !readOnly else { throw failure(.notFound, "the store has never been written", "Open it writable once") }
            try environment.write { txn in
                try txn.put(withUnsafeBytes(of: formatVersion.littleEndian) { Array($0) }, forKey: "format", in: meta)
            }
        case let version? where version > formatVersion:
            throw failure(
                .newerFormat,
                "the store has format \(version), written by a newer version of this library (this one reads up to \(formatVersion))",
                "Upgrade the library, or export the store with the newer version's wfctl and import it here")
        case let version? where version < formatVersion:
            guard !readOnly else {
                throw failure(.incompatible, "the store has the older format \(version)", "Open it writable once to migrate it to format \(formatVersion)")
            }
            // Opened before the migrations' transaction: opening a database takes a write
            // transaction of its own, which would wait forever inside another one.
            let layout = try StoreLayout(environment: environment)
            try environment.write { txn in
                for migration in migrations where migration.from >= version { try migration.apply(txn, layout) }
                try txn.put(withUnsafeBytes(of: formatVersion.littleEndian) { Array($0) }, forKey: "format", in: meta)
            }
        default:
            break
        }
    }

    /// Runs `body`, turning LMDB errors into storage failures.
    func call<R>(_ body: () throws -> R) throws(StorageFailure) -> R {
        try callLMDB(at: location, body)
    }

    func failure(_ kind: StorageFailure.Kind, _ operation: String, _ detail: String, recovery: String = "") -> StorageFailure {
        StorageFailure(kind: kind, backend: name, location: location, operation: operation, detail: detail, recovery: recovery)
    }

    // MARK: Durability

    public func sync() throws(StorageFailure) {
        guard !isReadOnly else { return }
        do { try environment.sync(force: true) } catch { throw error.storageFailure }
    }

    /// Closes the environment now (its signals' too, which share it), whoever else still holds
    /// this storage: later calls fail with ``StorageFailure/Kind/closed``, and the path may be
    /// opened again, also after the store's files were deleted or replaced.
    public func close() {
        syncTask.withLock { $0?.cancel() }
        environment.close()
    }

    public func syncPeriodically(every interval: Duration) {
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

    // MARK: Operations

    public func statistics() throws(StorageFailure) -> StorageStatistics {
        return try call {
            let info = try environment.info()
            return try environment.read { txn in
                StorageStatistics(
                    backend: name, formatVersion: Self.formatVersion, instances: try txn.count(of: layout.instances),
                    logEntries: try txn.count(of: layout.log) - segmentCount(txn) + archivedEntryCount(txn) + txn.count(of: layout.journal)
                        - leftBehindCount(txn),
                    snapshots: try txn.count(of: layout.snapshots),
                    capacityBytes: info.mapSize, usedBytes: info.usedBytes, readersInUse: info.readersInUse,
                    maxReaders: info.maxReaders, lastTransactionID: info.lastTransactionID)
            }
        }
    }

    /// Reads every record of each named database, so that LMDB visits every page.
    public func checkStructure(progress: (String) -> Void) -> [StoreDamage] {
        var damage: [StoreDamage] = []
        func walk<K: LMDBEncodable, V>(_ database: Database<K, V>, _ area: String) {
            progress("reading every record of \(area)")
            do {
                try environment.read { txn in try txn.forEach(in: database) { _, _ in true } }
            } catch {
                damage.append(StoreDamage(area: area, instance: nil, sequence: nil, detail: "\(error)"))
            }
        }
        walk(layout.meta, "meta")
        walk(layout.instances, "instances")
        walk(layout.state, "state")
        walk(layout.log, "log")
        walk(layout.journal, "journal")
        walk(layout.archive, "archive")
        walk(layout.snapshots, "snapshots")
        return damage
    }

    public func signalStorage() throws(StorageFailure) -> any SignalStorage {
        try signalLayout()
    }

    /// The signal tables' layout if they are open already (``signalLayout()`` opens them).
    var openSignalLayout: SignalLayout? { signals.withLock { $0?.layout } }

    func signalLayout() throws(StorageFailure) -> LMDBSignalStorage {
        try signals.withLock { (signals) throws(StorageFailure) -> LMDBSignalStorage in
            if let signals { return signals }
            do throws(LMDBError) {
                let opened = try LMDBSignalStorage(environment: environment)
                signals = opened
                return opened
            } catch {
                throw error.storageFailure
            }
        }
    }

    /// A compact copy (LMDB files never shrink in place).
    public func copy(to destination: String) throws(StorageFailure) {
        do { try environment.copy(to: destination, compact: true) } catch { throw error.storageFailure }
    }
}
