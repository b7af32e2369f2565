import CLMDB

extension Transaction where Mode: TransactionMode {
    /// Calls `body` with the stored bytes for `key`, without copying them out of the map;
    /// returns `nil` when the key is absent. The buffer is valid only inside `body`.
    public func withValue<K: LMDBEncodable, V, R>(
        forKey key: K, in database: Database<K, V>, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        let found: UnsafeRawBufferPointer? = try key.withLMDBBytes { keyBytes throws(LMDBError) in
            try checkKey(keyBytes, "get from \(database.label)")
            var data = MDB_val()
            let rc = withMDBVal(keyBytes) { mdb_get(txn, database.dbi, &$0, &data) }
            if rc == MDB_NOTFOUND { return nil }
            guard rc == 0 else { throw failure(rc, "get from \(database.label)") }
            return try checked(data.buffer, "get from \(database.label)")
        }
        return try found.map(body)
    }

    /// What `decode` makes of the stored bytes for `key` (read in place); `nil` when the key is
    /// absent or `decode` returns `nil`.
    public func value<K: LMDBEncodable, V, R>(
        forKey key: K, in database: Database<K, V>, _ decode: (UnsafeRawBufferPointer) throws -> R?
    ) throws -> R? {
        try withValue(forKey: key, in: database, decode) ?? nil
    }

    /// The value stored for `key`, decoded; `nil` when the key is absent.
    public func get<K: LMDBEncodable, V: LMDBDecodable>(_ key: K, in database: Database<K, V>) throws(LMDBError) -> V? {
        do {
            return try withValue(forKey: key, in: database) { bytes in try V(lmdbBytes: bytes) }
        } catch let error as LMDBError {
            throw error
        } catch {
            throw decodingFailure(error, database)
        }
    }

    /// Whether `key` is present.
    public func contains<K: LMDBEncodable, V>(_ key: K, in database: Database<K, V>) throws(LMDBError) -> Bool {
        do {
            return try withValue(forKey: key, in: database) { _ in true } ?? false
        } catch let error as LMDBError {
            throw error
        } catch {
            throw decodingFailure(error, database)
        }
    }

    /// Entry count, B-tree depth and pages of `database`, as of this transaction.
    public func statistics<K, V>(of database: Database<K, V>) throws(LMDBError) -> DatabaseStatistics {
        var stat = MDB_stat()
        let rc = mdb_stat(txn, database.dbi, &stat)
        guard rc == 0 else { throw failure(rc, "stat \(database.label)") }
        return DatabaseStatistics(stat)
    }

    /// The number of entries in `database`, as of this transaction.
    public func count<K, V>(of database: Database<K, V>) throws(LMDBError) -> Int {
        try statistics(of: database).entries
    }

    /// Opens a cursor on `database` for the duration of `body`.
    public func withCursor<K, V, R>(
        on database: Database<K, V>, _ body: (borrowing Cursor<K, V, Mode>) throws -> R
    ) throws -> R {
        var cursor: OpaquePointer?
        let rc = mdb_cursor_open(txn, database.dbi, &cursor)
        guard rc == 0, let cursor else { throw failure(rc, "open a cursor on \(database.label)") }
        defer { mdb_cursor_close(cursor) }
        return try body(Cursor(cursor: cursor, environment: environment, database: database, state: state))
    }

    /// Visits entries in key order (or reverse order) starting at the first key `>= start`
    /// (or `<= start` when `reverse`), until `body` returns `false` or the entries run out.
    /// The buffers point into the map and are valid only during each call.
    public func forEach<K: LMDBEncodable, V>(
        in database: Database<K, V>, from start: K? = nil, reverse: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(on: database) { cursor in
            var entry: RawEntry?
            if let start {
                entry = reverse ? try cursor.seek(atMost: start) : try cursor.seek(atLeast: start)
            } else {
                entry = reverse ? try cursor.last() : try cursor.first()
            }
            let step = reverse ? MDB_PREV : MDB_NEXT
            while let current = entry {
                let key = try checked(current.key, "read \(database.label)")
                guard try body(key, try checked(current.value, "read \(database.label)")) else { return }
                let (next, rc) = cursorMove(cursor.cursor, step)
                guard rc == 0 || rc == MDB_NOTFOUND else { throw cursor.failure(rc, reverse ? "previous" : "next") }
                entry = next
            }
        }
    }

    /// Visits decoded entries in key order; see ``forEach(in:from:reverse:_:)``.
    public func forEachDecoded<K: LMDBCodable, V: LMDBDecodable>(
        in database: Database<K, V>, from start: K? = nil, reverse: Bool = false,
        _ body: (K, V) throws -> Bool
    ) throws {
        try forEach(in: database, from: start, reverse: reverse) { key, value in
            try body(K(lmdbBytes: key), V(lmdbBytes: value))
        }
    }

    private func decodingFailure<K, V>(_ error: any Error, _ database: Database<K, V>) -> LMDBError {
        LMDBError(kind: .decodingFailed, path: environment.path, operation: "decode a value of \(database.label)",
                  detail: "\(error)", recovery: "Read it with the type it was written with")
    }
}

/// Entry count and shape of a database's B-tree.
public struct DatabaseStatistics: Sendable, Hashable {
    /// Number of key/value entries.
    public let entries: Int
    /// Depth of the B-tree.
    public let depth: Int
    /// Internal, leaf and overflow pages.
    public let branchPages: Int, leafPages: Int, overflowPages: Int
    /// The page size in bytes.
    public let pageSize: Int

    init(_ stat: MDB_stat) {
        entries = stat.ms_entries
        depth = Int(stat.ms_depth)
        branchPages = stat.ms_branch_pages
        leafPages = stat.ms_leaf_pages
        overflowPages = stat.ms_overflow_pages
        pageSize = Int(stat.ms_psize)
    }

    /// Bytes occupied by the database's pages.
    public var bytes: Int { (branchPages + leafPages + overflowPages) * pageSize }
}
