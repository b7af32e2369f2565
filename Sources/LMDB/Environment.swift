import CLMDB
import Dispatch
import Synchronization
import WorkflowLocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: one store directory, its named databases and its transactions.
///
/// - One per path per process: opening a path that is already open returns the same object
///   (or fails with ``LMDBError/Kind/alreadyOpen`` if the configuration differs), as LMDB requires.
///   While an environment is open, its path keeps to the files it opened: after they are
///   deleted or replaced, opening the path fails with `alreadyOpen` until it is closed.
/// - Opened with `MDB_NOTLS`, so read transactions are not tied to threads; stale reader slots
///   left by crashed processes are cleared at open.
/// - Transactions are closure-scoped: ``read(_:)`` and ``write(_:)``. A write commits when its
///   closure returns and aborts when it throws. Writes from async code (the `async` `write(_:)`)
///   run on this environment's serial writer queue, so begin and commit happen on one OS thread.
/// - When a write finds the map full, the transaction is aborted, the map doubles (up to
///   ``EnvironmentConfiguration/maximumMapSize``) and the closure runs again: keep side effects
///   outside write closures, or make them idempotent.
/// - The environment closes when the last reference to it goes away, or at ``close()``: then
///   its later uses fail with ``LMDBError/Kind/closed`` and the path may be opened again.
public final class Environment: Sendable {
    /// The store directory, as given at open.
    public let path: String
    /// The configuration it was opened with.
    public let configuration: EnvironmentConfiguration
    /// LMDB's maximum key size in bytes (511 for the Debian build).
    public let maxKeySize: Int
    /// The size of a page of the data file.
    let pageSize: UInt
    /// The data file's inode, to find its mapping (``MapLocation``).
    private let dataFileInode: UInt64
    /// Where the data file is mapped (0: unknown); changed only under the gate's exclusive lock.
    private let mapStart = Atomic<UInt>(0)

    // MDB_env is safe to share between threads when opened with MDB_NOTLS: transactions are
    // begun from any thread, mdb_env_info/stat/sync are thread-safe, and map resizes are kept
    // apart from live transactions by `gate`, as is `close()`, after which no use reaches it
    // (each checks `closed` with the gate held). The pointer itself never changes.
    nonisolated(unsafe) let handle: OpaquePointer
    let gate = ResizeGate()
    /// Set once, by ``close()`` with the gate held exclusively; every use of `handle` checks it
    /// with the gate held (shared or exclusive), so none reaches a closed handle.
    private let closed = Atomic<Bool>(false)
    private let identity: FileIdentity
    /// The data and lock files this environment opened.
    private let files: StoreFiles
    private let databases = Lock<[String: MDB_dbi]>([:])
    private let writerQueue: DispatchQueue
    /// The bounded wait for the store's writer, in front of LMDB's own (see ``WriterLock``).
    let writerLock: WriterLock

    private init(path: String, configuration: EnvironmentConfiguration, handle: OpaquePointer, identity: FileIdentity) {
        self.path = path
        self.configuration = configuration
        self.handle = handle
        self.identity = identity
        // The data file through LMDB's own descriptor; the lock file as the path has it just
        // after LMDB opened it.
        var fd: Int32 = -1, info = stat()
        let data = mdb_env_get_fd(handle, &fd) == 0 && fstat(fd, &info) == 0 ? FileIdentity(info) : nil
        self.files = StoreFiles(data: data, lock: FileIdentity(path: path + "/lock.mdb"))
        self.maxKeySize = Int(mdb_env_get_maxkeysize(handle))
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        self.pageSize = UInt(stat.ms_psize)
        self.dataFileInode = data?.inode ?? 0
        mapStart.store(MapLocation.start(ofFileWithInode: dataFileInode) ?? 0, ordering: .relaxed)
        self.writerQueue = DispatchQueue(label: "lmdb.writer:\(path)")
        self.writerLock = WriterLock(directory: path, readOnly: configuration.readOnly)
    }

    deinit {
        writerLock.report(to: nil)
        if !closed.load(ordering: .acquiring) { mdb_env_close(handle) }
        EnvironmentRegistry.shared.remove(identity, ifOwnedBy: ObjectIdentifier(self))
    }

    /// Closes the environment now, whoever else still holds it: waits for the transactions this
    /// process has in progress on it, then lets go of its files. Later uses fail with
    /// ``LMDBError/Kind/closed`` (``lastTransactionID`` reads 0), and opening the path gives a
    /// new environment, also after the store's files were deleted or replaced. Calling it again
    /// does nothing. Not from inside one of its transactions' closures: it would wait for itself.
    public func close() {
        gate.withExclusive {
            guard !closed.load(ordering: .relaxed) else { return }
            // Forgotten before it is closed, so the registry never hands out a closed environment.
            EnvironmentRegistry.shared.remove(identity, ifOwnedBy: ObjectIdentifier(self))
            writerLock.report(to: nil)
            mdb_env_close(handle)
            closed.store(true, ordering: .releasing)
        }
    }

    /// Whether ``close()`` closed the environment.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Throws ``LMDBError/Kind/closed`` once the environment is closed; call with the gate held.
    private func requireOpen(_ operation: String) throws(LMDBError) {
        if closed.load(ordering: .relaxed) { throw LMDBError.closed(path: path, operation: operation) }
    }

    /// Runs `body` with the gate held shared, once ``requireOpen(_:)`` passed for `operation`.
    private func whileOpen<R>(_ operation: String, _ body: () throws(LMDBError) -> R) throws(LMDBError) -> R {
        try gate.withShared { () throws(LMDBError) -> R in
            try requireOpen(operation)
            return try body()
        }
    }

    /// Opens (or creates) the store at `path`.
    ///
    /// Throws ``LMDBError`` with kind `missingDirectory` when the directory (or, with
    /// `createDirectoryIfMissing`, its parent) does not exist, `notAnLMDBEnvironment` for a file
    /// or garbage at the path, `readOnly` when the location cannot be written, `versionMismatch`,
    /// or `alreadyOpen` when this process has the path open with another configuration, or has
    /// an environment open on files at the path that were since deleted or replaced (the
    /// directory's, or a deleted directory's whose inode the path's directory now has).
    public static func open(
        path: String, configuration: EnvironmentConfiguration = EnvironmentConfiguration()
    ) throws(LMDBError) -> Environment {
        if configuration.createDirectoryIfMissing && !configuration.readOnly {
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                throw LMDBError.from(code: errno, path: path, operation: "create the store directory")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw LMDBError.from(code: errno, path: path, operation: "open") }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw LMDBError.from(code: ENOTDIR, path: path, operation: "open") }
        let identity = FileIdentity(info)

        return try EnvironmentRegistry.shared.withEntry(identity) { existing throws(LMDBError) in
            if let existing {
                // The open environment's files are no longer the path's: returning it would write
                // to deleted files, and a second environment on the path would not be one per
                // path. Refused until the earlier environment is closed.
                guard existing.files == StoreFiles(in: path) else {
                    throw LMDBError(kind: .alreadyOpen, path: path, operation: "open",
                                    detail: "this process still has an environment open on store files that were deleted or replaced at this path",
                                    recovery: "Close the store opened at this path before deleting or replacing its files (stop its hosts, then WorkflowStore.close() or Environment.close()), then open it again")
                }
                guard existing.configuration == configuration else {
                    throw LMDBError(kind: .alreadyOpen, path: path, operation: "open",
                                    detail: "this process already has the store open with another configuration",
                                    recovery: "Share the Environment that is already open instead of opening the path twice")
                }
                return existing
            }
            let handle = try openHandle(path: path, configuration: configuration)
            return Environment(path: path, configuration: configuration, handle: handle, identity: identity)
        }
    }

    private static func openHandle(path: String, configuration: EnvironmentConfiguration) throws(LMDBError) -> OpaquePointer {
        var env: OpaquePointer?
        var rc = mdb_env_create(&env)
        guard rc == 0, let env else { throw LMDBError.from(code: rc, path: path, operation: "create an environment") }
        var flags = UInt32(MDB_NOTLS)
        switch configuration.durability {
        case .strict: break
        case .noMetaSync: flags |= UInt32(MDB_NOMETASYNC)
        case .noSync: flags |= UInt32(MDB_NOSYNC)
        }
        if configuration.readOnly { flags |= UInt32(MDB_RDONLY) }
        rc = mdb_env_set_maxdbs(env, MDB_dbi(configuration.maxDatabases))
        if rc == 0 { rc = mdb_env_set_maxreaders(env, UInt32(configuration.maxReaders)) }
        if rc == 0 { rc = mdb_env_set_mapsize(env, min(configuration.initialMapSize, configuration.maximumMapSize)) }
        if rc == 0 { rc = mdb_env_open(env, path, flags, mdb_mode_t(configuration.fileMode)) }
        guard rc == 0 else {
            mdb_env_close(env)
            // The data file may say more clearly what is wrong than LMDB's code.
            try DataFileCheck.check(directory: path, readOnly: configuration.readOnly)
            throw LMDBError.from(code: rc, path: path, operation: "open")
        }
        // Checked after LMDB's open, which waits while another process creates the file (it
        // holds the lock file's exclusive lock until the meta pages are written); before it, a
        // file being created looks damaged. LMDB's open reads the meta pages without touching
        // the rest of the map, so a truncated file is still refused before any page past its end
        // is read.
        do {
            try DataFileCheck.check(directory: path, readOnly: configuration.readOnly)
        } catch {
            mdb_env_close(env)
            throw error
        }
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        return env
    }

    // MARK: - Transactions

    /// Where values may lie, as of now (called with a transaction begun, so the map is stable).
    private func mapSpan(acceptsOutside: Bool) -> MapSpan {
        let start = mapStart.load(ordering: .relaxed)
        guard start != 0 else { return MapSpan(start: 0, mappedEnd: 0, usedEnd: 0, acceptsOutside: true) }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        let used = (UInt(info.me_last_pgno) + 1) * pageSize
        return MapSpan(start: start, mappedEnd: start + UInt(info.me_mapsize), usedEnd: start + min(used, UInt(info.me_mapsize)),
                       acceptsOutside: acceptsOutside)
    }

    /// Runs `body` in a read-only snapshot of the store. Keep reads short: a long-lived read
    /// transaction stops LMDB from reusing pages and the file grows.
    public func read<R>(_ body: (borrowing ReadTransaction) throws -> R) throws -> R {
        while true {
            let outcome: ReadOutcome<R> = try gate.withShared { () throws -> ReadOutcome<R> in
                try requireOpen("begin a read transaction")
                var txn: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                if rc == MDB_MAP_RESIZED { return .retryAfterResize }
                guard rc == 0, let txn else { throw LMDBError.from(code: rc, path: path, operation: "begin a read transaction") }
                defer { mdb_txn_abort(txn) }
                var state = TransactionState(span: mapSpan(acceptsOutside: false))
                return .done(try withUnsafeMutablePointer(to: &state) { statePointer in
                    try body(ReadTransaction(txn: txn, environment: self, state: statePointer))
                })
            }
            switch outcome {
            case .done(let value): return value
            case .retryAfterResize: try adoptResize()
            }
        }
    }

    /// Runs `body` in the write transaction and commits when it returns; aborts and rethrows
    /// when it throws. On a full map the map grows and `body` runs again (see the type's notes).
    /// Do not call from inside another transaction's closure on the same thread.
    ///
    /// Waits at most ``EnvironmentConfiguration/writerWait`` for the store's writer, which another
    /// process or thread may hold, and then throws ``LMDBError/Kind/writerBusy`` naming the holder
    /// (its ``LMDBError/holder``), with nothing written.
    ///
    /// `durability` sets the durability of this one commit; `nil` uses the environment's. The
    /// closure may still change it (``Transaction/commitDurability``) before it returns.
    /// (LMDB 0.9 has no per-transaction sync flag, so the environment's sync flags are switched
    /// for the commit while this process holds the write lock, and restored before it lets go.)
    public func write<R>(
        durability: EnvironmentConfiguration.Durability? = nil, _ body: (borrowing WriteTransaction) throws -> R
    ) throws -> R {
        try requireWritable("begin a write transaction")
        while true {
            let outcome: WriteOutcome<R> = try gate.withShared { () throws -> WriteOutcome<R> in
                try requireOpen("begin a write transaction")
                return try writerLock.withWriter(waitingAtMost: configuration.writerWait, operation: "begin a write transaction") {
                    try writeOnce(durability: durability, body)
                }
            }
            switch outcome {
            case .done(let value): return value
            case .retryAfterResize: try adoptResize()
            case .retryAfterGrowth(let size): try grow(from: size)
            }
        }
    }

    /// One try of a write: begins the transaction (the writer already taken), runs `body`,
    /// commits; or says why to try again.
    private func writeOnce<R>(
        durability: EnvironmentConfiguration.Durability?, _ body: (borrowing WriteTransaction) throws -> R
    ) throws -> WriteOutcome<R> {
        var txn: OpaquePointer?
        var rc = mdb_txn_begin(handle, nil, 0, &txn)
        if rc == MDB_MAP_RESIZED { return .retryAfterResize }
        guard rc == 0, let txn else { throw LMDBError.from(code: rc, path: path, operation: "begin a write transaction") }
        var state = TransactionState(span: mapSpan(acceptsOutside: true), durability: durability)
        let mapSize = currentMapSize()
        let result: R
        do {
            result = try withUnsafeMutablePointer(to: &state) { statePointer in
                try body(WriteTransaction(txn: txn, environment: self, state: statePointer))
            }
        } catch {
            mdb_txn_abort(txn)
            if state.mapFull { return .retryAfterGrowth(from: mapSize) }
            throw error
        }
        if state.mapFull {
            mdb_txn_abort(txn)
            return .retryAfterGrowth(from: mapSize)
        }
        rc = commit(txn, durability: state.durability)
        if rc == MDB_MAP_FULL { return .retryAfterGrowth(from: mapSize) }
        guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "commit") }
        return .done(result)
    }

    /// Commits `txn`, with `durability` instead of the environment's for this commit. Other
    /// writers of this process wait for the writer until it returns, so switching the
    /// environment's sync flags here affects this commit alone.
    private func commit(_ txn: OpaquePointer, durability: EnvironmentConfiguration.Durability?) -> Int32 {
        let base = Self.syncFlags(configuration.durability)
        guard let durability, Self.syncFlags(durability) != base else { return mdb_txn_commit(txn) }
        let syncFlags = UInt32(MDB_NOSYNC | MDB_NOMETASYNC)
        mdb_env_set_flags(handle, syncFlags, 0)
        let override = Self.syncFlags(durability)
        if override != 0 { mdb_env_set_flags(handle, override, 1) }
        defer {
            mdb_env_set_flags(handle, syncFlags, 0)
            if base != 0 { mdb_env_set_flags(handle, base, 1) }
        }
        return mdb_txn_commit(txn)
    }

    /// Runs `body` in the write transaction on this environment's writer queue and returns
    /// its result once committed. Safe from any task: the awaiting task never holds LMDB's
    /// writer lock, and begin and commit happen on one OS thread.
    public func write<R: Sendable>(_ body: @escaping @Sendable (borrowing WriteTransaction) throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            writerQueue.async {
                continuation.resume(with: Result { try self.write(body) })
            }
        }
    }

    private static func syncFlags(_ durability: EnvironmentConfiguration.Durability) -> UInt32 {
        switch durability {
        case .strict: return 0
        case .noMetaSync: return UInt32(MDB_NOMETASYNC)
        case .noSync: return UInt32(MDB_NOSYNC)
        }
    }

    private enum ReadOutcome<R> { case done(R), retryAfterResize }
    private enum WriteOutcome<R> { case done(R), retryAfterResize, retryAfterGrowth(from: Int) }

    func requireWritable(_ operation: String) throws(LMDBError) {
        if configuration.readOnly {
            throw LMDBError(kind: .readOnly, path: path, operation: operation,
                            detail: "the store was opened read-only",
                            recovery: "Open it with readOnly: false to write")
        }
    }

    /// Reports slow writes to `report`, from now until the environment closes (or until called
    /// with `nil`): each write transaction of this process still open
    /// ``EnvironmentConfiguration/slowWrite`` after it began (once per transaction, looked at
    /// every 100 ms), and each write of this process that has waited that long for another process
    /// to let go of the writer (once per write, with the holder).
    public func reportSlowWrites(_ report: (@Sendable (SlowWrite) -> Void)?) {
        guard !configuration.readOnly else { return }
        writerLock.report(to: report.map { SlowWriteReporting(after: configuration.slowWrite, report: $0) })
    }

    // MARK: - Map size

    private func currentMapSize() -> Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_mapsize
    }

    /// Doubles the map (bounded by the maximum) unless another thread already grew it past `size`.
    private func grow(from size: Int) throws(LMDBError) {
        try gate.withExclusive { () throws(LMDBError) in
            try requireOpen("grow the map")
            let current = currentMapSize()
            guard current <= size else { return }
            guard current < configuration.maximumMapSize else {
                throw LMDBError(kind: .mapFull, code: MDB_MAP_FULL, path: path, operation: "write",
                                detail: "the map is full at its maximum of \(configuration.maximumMapSize) bytes; the transaction was not committed",
                                recovery: "Raise maximumMapSize, delete data, or compact the store")
            }
            let next = min(max(current * 2, current + (1 << 20)), configuration.maximumMapSize)
            let rc = mdb_env_set_mapsize(handle, next)
            guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "grow the map") }
            mapStart.store(MapLocation.start(ofFileWithInode: dataFileInode) ?? 0, ordering: .relaxed)
        }
    }

    /// Adopts the map size another process set (`MDB_MAP_RESIZED`).
    private func adoptResize() throws(LMDBError) {
        try gate.withExclusive { () throws(LMDBError) in
            try requireOpen("adopt the new map size")
            let rc = mdb_env_set_mapsize(handle, 0)
            guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "adopt the new map size") }
            mapStart.store(MapLocation.start(ofFileWithInode: dataFileInode) ?? 0, ordering: .relaxed)
        }
    }

    // MARK: - Databases

    /// The named database `name` (created if absent and the store is writable), opened once per
    /// environment and kept open. Open databases at start-up, outside any transaction.
    public func database<K, V>(
        named name: String, flags: DatabaseFlags = [], keyType: K.Type = K.self, valueType: V.Type = V.self
    ) throws(LMDBError) -> Database<K, V> {
        if let dbi = databases.withLock({ $0[name] }) { return Database(name: name, dbi: dbi) }
        let dbi = try configuration.readOnly ? openDatabaseReadOnly(name, flags) : openDatabaseWritable(name, flags)
        return Database(name: name, dbi: dbi)
    }

    private func openDatabaseWritable(_ name: String, _ flags: DatabaseFlags) throws(LMDBError) -> MDB_dbi {
        do {
            return try write { txn in try self.openDatabase(name, flags.rawValue | UInt32(MDB_CREATE), txn.txn) }
        } catch let error as LMDBError {
            throw error
        } catch {
            preconditionFailure("opening a database threw a non-LMDB error: \(error)")
        }
    }

    /// A handle opened in a read-only transaction survives only if that transaction commits.
    private func openDatabaseReadOnly(_ name: String, _ flags: DatabaseFlags) throws(LMDBError) -> MDB_dbi {
        try whileOpen("open database '\(name)'") { () throws(LMDBError) -> MDB_dbi in
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
            guard rc == 0, let txn else { throw LMDBError.from(code: rc, path: path, operation: "open database '\(name)'") }
            let dbi: MDB_dbi
            do throws(LMDBError) {
                dbi = try openDatabase(name, flags.rawValue, txn)
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            let commit = mdb_txn_commit(txn)
            guard commit == 0 else { throw LMDBError.from(code: commit, path: path, operation: "open database '\(name)'") }
            return dbi
        }
    }

    private func openDatabase(_ name: String, _ flags: UInt32, _ txn: OpaquePointer) throws(LMDBError) -> MDB_dbi {
        try databases.withLock { cache throws(LMDBError) in
            if let dbi = cache[name] { return dbi }
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn, name, flags, &dbi)
            if rc == MDB_NOTFOUND {
                throw LMDBError(kind: .databaseNotFound, code: rc, path: path, operation: "open database '\(name)'",
                                detail: "the store has no database named '\(name)'",
                                recovery: "Open the store writable once to create it, or check the name")
            }
            guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "open database '\(name)'") }
            cache[name] = dbi
            return dbi
        }
    }

    // MARK: - Facts and maintenance

    /// The id of the last committed write transaction, by any process. Costs nanoseconds and
    /// sees other processes' commits at once: poll it to detect change.
    ///
    /// Compare it with the ``Transaction/id`` of the read transaction you last read from, not
    /// with an earlier value of this property: LMDB writes the meta page (which this reads) a
    /// moment before new read transactions can see the commit, so a read begun in that moment
    /// still sees the previous snapshot. `lastTransactionID > lastReadTransaction.id` is the
    /// reliable test for "there is something I have not read".
    public var lastTransactionID: UInt64 {
        gate.withShared { () -> UInt64 in
            guard !closed.load(ordering: .relaxed) else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return UInt64(info.me_last_txnid)
        }
    }

    /// Map size, pages used, readers and the last transaction id.
    public func info() throws(LMDBError) -> EnvironmentInfo {
        try whileOpen("read the environment's facts") { () throws(LMDBError) -> EnvironmentInfo in
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            var stat = MDB_stat()
            mdb_env_stat(handle, &stat)
            return EnvironmentInfo(
                mapSize: info.me_mapsize, pageSize: Int(stat.ms_psize),
                lastPageNumber: info.me_last_pgno, lastTransactionID: UInt64(info.me_last_txnid),
                maxReaders: Int(info.me_maxreaders), readersInUse: Int(info.me_numreaders)
            )
        }
    }

    /// Flushes buffers to disk; needed only with `noSync` or `noMetaSync` durability.
    public func sync(force: Bool = true) throws(LMDBError) {
        try whileOpen("sync") { () throws(LMDBError) in
            let rc = mdb_env_sync(handle, force ? 1 : 0)
            guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "sync") }
        }
    }

    /// Clears reader slots left by processes that died; returns how many were cleared.
    @discardableResult
    public func clearStaleReaders() throws(LMDBError) -> Int {
        try whileOpen("check readers") { () throws(LMDBError) -> Int in
            var dead: Int32 = 0
            let rc = mdb_reader_check(handle, &dead)
            guard rc == 0 else { throw LMDBError.from(code: rc, path: path, operation: "check readers") }
            return Int(dead)
        }
    }

    /// Writes a consistent copy of the store into the directory `destination` (created if
    /// missing, must be empty). With `compact`, free pages are omitted and the copy is renumbered,
    /// so the copy can be much smaller than the original (LMDB files never shrink in place).
    public func copy(to destination: String, compact: Bool = true) throws(LMDBError) {
        if mkdir(destination, 0o755) != 0 && errno != EEXIST {
            throw LMDBError.from(code: errno, path: destination, operation: "create the copy's directory")
        }
        try whileOpen("copy the store") { () throws(LMDBError) in
            let rc = mdb_env_copy2(handle, destination, compact ? UInt32(MDB_CP_COMPACT) : 0)
            guard rc == 0 else { throw LMDBError.from(code: rc, path: destination, operation: "copy \(path)") }
        }
    }
}

/// A snapshot of an environment's size and activity.
public struct EnvironmentInfo: Sendable, Hashable {
    /// The current map size in bytes.
    public let mapSize: Int
    /// The page size in bytes.
    public let pageSize: Int
    /// The highest page number in use.
    public let lastPageNumber: Int
    /// The id of the last committed write transaction.
    public let lastTransactionID: UInt64
    /// The reader slots the environment was opened with.
    public let maxReaders: Int
    /// Reader slots in use (by every process).
    public let readersInUse: Int
    /// Bytes of the map in use.
    public var usedBytes: Int { (lastPageNumber + 1) * pageSize }
}
