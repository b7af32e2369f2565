import CLMDB

/// Marks what a ``Transaction`` may do.
public protocol TransactionMode {}
/// A read-only snapshot of the store.
public enum ReadOnly: TransactionMode {}
/// The single writer: reads see its own uncommitted writes.
public enum ReadWrite: TransactionMode {}

/// A read-only transaction, handed to ``Environment/read(_:)``.
public typealias ReadTransaction = Transaction<ReadOnly>
/// A read-write transaction, handed to ``Environment/write(_:)``.
public typealias WriteTransaction = Transaction<ReadWrite>

/// An LMDB transaction that exists only inside the closure it is handed to.
///
/// It is `~Copyable` and passed `borrowing`, so it cannot be stored, returned or captured
/// beyond its closure; the closure is synchronous, so it cannot span an `await` and LMDB's
/// begin/commit-on-one-thread rule holds. It is not `Sendable`, so it cannot reach another task.
public struct Transaction<Mode: TransactionMode>: ~Copyable {
    let txn: OpaquePointer
    // Owner: the environment's read/write call runs the closure this transaction lives in.
    unowned(unsafe) let environment: Environment
    let state: UnsafeMutablePointer<TransactionState>

    init(txn: OpaquePointer, environment: Environment, state: UnsafeMutablePointer<TransactionState>) {
        self.txn = txn
        self.environment = environment
        self.state = state
    }

    /// LMDB's id of this transaction. A read transaction's id is that of the snapshot it sees
    /// (the last commit visible to it); a write transaction's id becomes the environment's
    /// ``Environment/lastTransactionID`` when it commits.
    public var id: UInt64 { UInt64(mdb_txn_id(txn)) }

    /// The durability this transaction's commit will have: the one
    /// ``Environment/write(durability:_:)`` was given (or the environment's) until set here; read
    /// when the closure returns.
    public var commitDurability: EnvironmentConfiguration.Durability? {
        get { state.pointee.durability }
        nonmutating set { state.pointee.durability = newValue }
    }

    func failure(_ rc: Int32, _ operation: @autoclosure () -> String) -> LMDBError {
        if rc == MDB_MAP_FULL { state.pointee.mapFull = true }
        return LMDBError.from(code: rc, path: environment.path, operation: operation())
    }

    func outsideMap(_ value: UnsafeRawBufferPointer, _ operation: String) -> LMDBError {
        LMDB.outsideMap(value, operation, path: environment.path)
    }

    func checkKey(_ key: UnsafeRawBufferPointer, _ operation: @autoclosure () -> String) throws(LMDBError) {
        try checkKeySize(key, in: environment, operation())
    }
}

/// Throws ``LMDBError/Kind/keyTooLong`` for an empty key or one longer than the environment allows.
func checkKeySize(_ key: UnsafeRawBufferPointer, in environment: Environment, _ operation: @autoclosure () -> String) throws(LMDBError) {
    if key.count == 0 || key.count > environment.maxKeySize {
        throw LMDBError(
            kind: .keyTooLong, path: environment.path, operation: operation(),
            detail: "a key of \(key.count) bytes; keys must be 1 to \(environment.maxKeySize) bytes",
            recovery: "Hash or shorten long keys and keep the full value in the record"
        )
    }
}

/// Per-transaction facts the environment needs after the closure returns.
struct TransactionState {
    /// A write hit `MDB_MAP_FULL`: the transaction is dead and must be retried after growth,
    /// whatever the closure did with the error.
    var mapFull = false
    /// Where values read in this transaction may lie.
    let span: MapSpan
    /// The durability of this commit, when the closure set one (``Transaction/commitDurability``).
    var durability: EnvironmentConfiguration.Durability?
}

/// The part of the memory map that holds committed pages, as of a transaction's start: every
/// value LMDB hands out from the map must lie within it. A corrupt page can make LMDB hand out
/// a value that points past the file's end or outside the map (reading it would end the process
/// with SIGBUS or SIGSEGV): such a value is refused with ``LMDBError/Kind/corrupted``.
struct MapSpan {
    let start: UInt
    /// The end of the mapping.
    let mappedEnd: UInt
    /// The end of the pages in use (the last committed page's end).
    let usedEnd: UInt
    /// A write transaction's own new pages live outside the map (LMDB keeps them in memory
    /// until commit), so values outside the map are accepted from it.
    let acceptsOutside: Bool

    /// Whether `value` lies where a value may.
    @inline(__always)
    func contains(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress, value.count > 0 else { return true }
        let low = UInt(bitPattern: base)
        let (high, overflow) = low.addingReportingOverflow(UInt(value.count))
        if low >= start && low < mappedEnd { return !overflow && high <= usedEnd }
        return acceptsOutside
    }
}

extension Transaction {
    /// `value`, read from the map by `operation`, once checked to lie within the pages in use.
    @inline(__always)
    func checked(_ value: UnsafeRawBufferPointer, _ operation: @autoclosure () -> String) throws(LMDBError) -> UnsafeRawBufferPointer {
        guard state.pointee.span.contains(value) else { throw outsideMap(value, operation()) }
        return value
    }
}

/// The error for a value that LMDB located outside the pages in use.
func outsideMap(_ value: UnsafeRawBufferPointer, _ operation: String, path: String) -> LMDBError {
    LMDBError(kind: .corrupted, path: path, operation: operation,
              detail: "a stored key or value of \(value.count) bytes lies outside the store's pages: a page is damaged",
              recovery: "Restore the store from a copy; wfctl check lists what is damaged")
}

@inline(__always)
func withMDBVal<R>(_ buffer: UnsafeRawBufferPointer, _ body: (inout MDB_val) throws -> R) rethrows -> R {
    var val = MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
    return try body(&val)
}

extension MDB_val {
    @inline(__always)
    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mv_data, count: mv_size) }
}
