import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One key/value pair seen through a cursor. Both buffers point into the map: they are valid
/// until the cursor moves or the transaction ends, and are never copied unless you decode them.
public struct RawEntry {
    /// The key's bytes.
    public let key: UnsafeRawBufferPointer
    /// The value's bytes.
    public let value: UnsafeRawBufferPointer

    /// The key decoded as `K`.
    public func key<K: LMDBDecodable>(as type: K.Type = K.self) throws(LMDBDecodingError) -> K {
        try K(lmdbBytes: key)
    }

    /// The value decoded as `V`.
    public func value<V: LMDBDecodable>(as type: V.Type = V.self) throws(LMDBDecodingError) -> V {
        try V(lmdbBytes: value)
    }
}

/// Moves `cursor` with `op`: the entry it lands on (`nil` past either end or on an error) and
/// LMDB's return code. Free and non-generic, so that a loop over a cursor needs no type metadata
/// per step (a method of the generic `Cursor` is passed its type's metadata on every call).
func cursorMove(_ cursor: OpaquePointer, _ op: MDB_cursor_op) -> (entry: RawEntry?, rc: Int32) {
    var key = MDB_val()
    var data = MDB_val()
    let rc = mdb_cursor_get(cursor, &key, &data, op)
    return (rc == 0 ? RawEntry(key: key.buffer, value: data.buffer) : nil, rc)
}

/// A position in a database, for ordered scans and seeks in either direction.
///
/// It lives only inside ``Transaction/withCursor(on:_:)`` and is closed when that returns.
/// Every move returns the entry it lands on, or `nil` past either end.
public struct Cursor<Key, Value, Mode: TransactionMode>: ~Copyable {
    let cursor: OpaquePointer
    // Owner: the environment's read/write call runs the transaction this cursor lives in.
    unowned(unsafe) let environment: Environment
    let database: Database<Key, Value>
    let state: UnsafeMutablePointer<TransactionState>
    /// The environment's, copied: reading it through `environment` retained and released the
    /// environment (a shared object, on the slow path) for every entry written.
    let maxKeySize: Int

    init(cursor: OpaquePointer, environment: Environment, database: Database<Key, Value>,
         state: UnsafeMutablePointer<TransactionState>) {
        self.cursor = cursor
        self.maxKeySize = environment.maxKeySize
        self.environment = environment
        self.database = database
        self.state = state
    }

    /// The first entry in key order.
    public func first() throws(LMDBError) -> RawEntry? { try move(MDB_FIRST, "first") }
    /// The last entry in key order.
    public func last() throws(LMDBError) -> RawEntry? { try move(MDB_LAST, "last") }
    /// The entry after the current one.
    public func next() throws(LMDBError) -> RawEntry? { try move(MDB_NEXT, "next") }
    /// The entry before the current one.
    public func previous() throws(LMDBError) -> RawEntry? { try move(MDB_PREV, "previous") }
    /// The entry under the cursor.
    public func current() throws(LMDBError) -> RawEntry? { try move(MDB_GET_CURRENT, "current") }

    /// The entry with exactly `key`, or `nil`.
    public func seek(exactly key: Key) throws(LMDBError) -> RawEntry? where Key: LMDBEncodable {
        try seek(key, MDB_SET_KEY, "seek")
    }

    /// The first entry whose key is `>= key`, or `nil` when every key is smaller.
    public func seek(atLeast key: Key) throws(LMDBError) -> RawEntry? where Key: LMDBEncodable {
        try seek(key, MDB_SET_RANGE, "seek")
    }

    /// The last entry whose key is `<= key`, or `nil` when every key is larger.
    public func seek(atMost key: Key) throws(LMDBError) -> RawEntry? where Key: LMDBEncodable {
        guard let entry = try seek(key, MDB_SET_RANGE, "seek") else { return try last() }
        let exact = key.withLMDBBytes { $0.elementsEqual(entry.key) }
        return exact ? entry : try previous()
    }

    private func seek(_ key: Key, _ op: MDB_cursor_op, _ name: String) throws(LMDBError) -> RawEntry?
    where Key: LMDBEncodable {
        try key.withLMDBBytes { keyBytes throws(LMDBError) in
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var data = MDB_val()
            let rc = mdb_cursor_get(cursor, &keyVal, &data, op)
            if rc == MDB_NOTFOUND { return nil }
            guard rc == 0 else { throw failure(rc, name) }
            return RawEntry(key: try checked(keyVal.buffer, name), value: try checked(data.buffer, name))
        }
    }

    private func move(_ op: MDB_cursor_op, _ name: String) throws(LMDBError) -> RawEntry? {
        let (entry, rc) = cursorMove(cursor, op)
        guard rc == 0 || rc == MDB_NOTFOUND || (rc == EINVAL && op == MDB_GET_CURRENT) else { throw failure(rc, name) }
        if let entry {
            _ = try checked(entry.key, name)
            _ = try checked(entry.value, name)
        }
        return entry
    }

    @inline(__always)
    func checked(_ value: UnsafeRawBufferPointer, _ name: String) throws(LMDBError) -> UnsafeRawBufferPointer {
        guard state.pointee.span.contains(value) else {
            throw outsideMap(value, "cursor \(name) in \(database.label)", path: environment.path)
        }
        return value
    }

    func failure(_ rc: Int32, _ name: String) -> LMDBError {
        if rc == MDB_MAP_FULL { state.pointee.mapFull = true }
        return LMDBError.from(code: rc, path: environment.path, operation: "cursor \(name) in \(database.label)")
    }
}

extension Cursor where Mode == ReadWrite {
    /// Reserves `size` bytes for `key` and lets `fill` write the value in place in the map
    /// (`MDB_RESERVE`), leaving the cursor on the new entry. Keys written in increasing order
    /// through one cursor skip the search from the root while they land on the page the cursor
    /// stands on.
    public func reserve(_ size: Int, forKey key: Key, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) throws
    where Key: LMDBEncodable {
        let target = try reserve(size, forKey: key, flags: UInt32(MDB_RESERVE))!
        try fill(target)
    }

    /// As ``reserve(_:forKey:_:)`` for a key after every key in the database (`MDB_APPEND`):
    /// LMDB then skips the search and, when the last page is full, starts a new one instead of
    /// splitting it in half, so keys appended in order fill their pages. Returns `false`, writing
    /// nothing, when a key at or after `key` exists.
    public func reserveAtEnd(_ size: Int, forKey key: Key, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) throws -> Bool
    where Key: LMDBEncodable {
        guard let target = try reserve(size, forKey: key, flags: UInt32(MDB_RESERVE | MDB_APPEND)) else { return false }
        try fill(target)
        return true
    }

    /// Reserves `size` bytes for the key whose encoding is `key`, as ``reserve(_:forKey:_:)`` does,
    /// or with `append` as ``reserveAtEnd(_:forKey:_:)`` does, and returns the space to fill before
    /// the next write in the transaction; `nil` when an append found a key at or after `key`. For
    /// loops that write many entries: no closure and no generic key encoding per entry, whose
    /// cost would rival LMDB's own insert.
    public func reserve(_ size: Int, forKeyBytes key: UnsafeRawBufferPointer, append: Bool) throws(LMDBError) -> UnsafeMutableRawBufferPointer? {
        if key.count == 0 || key.count > maxKeySize { try checkKeySize(key, in: environment, "cursor put into \(database.label)") }
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val(mv_size: size, mv_data: nil)
        let rc = mdb_cursor_put(cursor, &keyVal, &data, UInt32(append ? MDB_RESERVE | MDB_APPEND : MDB_RESERVE))
        if rc == MDB_KEYEXIST && append { return nil }
        guard rc == 0 else { throw failure(rc, "put") }
        return UnsafeMutableRawBufferPointer(start: data.mv_data, count: size)
    }

    /// The space reserved for `key`, or `nil` when an append found a key at or after it.
    private func reserve(_ size: Int, forKey key: Key, flags: UInt32) throws(LMDBError) -> UnsafeMutableRawBufferPointer?
    where Key: LMDBEncodable {
        try key.withLMDBBytes { keyBytes throws(LMDBError) in
            try reserve(size, forKeyBytes: keyBytes, append: flags & UInt32(MDB_APPEND) != 0)
        }
    }

    /// Deletes the entry under the cursor; the cursor then stands on the entry after it.
    public func deleteCurrent() throws(LMDBError) {
        let rc = mdb_cursor_del(cursor, 0)
        guard rc == 0 else { throw failure(rc, "delete") }
    }
}
