import CLMDB

extension Transaction where Mode == ReadWrite {
    /// Stores `value` under `key`, replacing any value there.
    public func put<K: LMDBEncodable, V: LMDBEncodable>(
        _ value: V, forKey key: K, in database: Database<K, V>
    ) throws(LMDBError) {
        _ = try store(value, key, database, flags: 0, "put into \(database.label)")
    }

    /// Stores `value` under `key` only if the key is absent; returns whether it was stored.
    @discardableResult
    public func insert<K: LMDBEncodable, V: LMDBEncodable>(
        _ value: V, forKey key: K, in database: Database<K, V>
    ) throws(LMDBError) -> Bool {
        try store(value, key, database, flags: UInt32(MDB_NOOVERWRITE), "insert into \(database.label)")
    }

    /// Stores `value` under `key`, which must sort after every key in the database
    /// (`MDB_APPEND`: no B-tree search, pages filled completely). Big-endian `UInt64` keys
    /// in increasing order satisfy this. An out-of-order key fails with ``LMDBError/Kind/badValue``.
    public func append<K: LMDBEncodable, V: LMDBEncodable>(
        _ value: V, forKey key: K, in database: Database<K, V>
    ) throws(LMDBError) {
        _ = try store(value, key, database, flags: UInt32(MDB_APPEND), "append to \(database.label)")
    }

    /// Reserves `size` bytes for `key` and lets `fill` write the value in place in the map
    /// (`MDB_RESERVE`: no intermediate copy). `append` uses `MDB_APPEND` ordering rules.
    public func reserve<K: LMDBEncodable, V>(
        _ size: Int, forKey key: K, in database: Database<K, V>, append: Bool = false,
        _ fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        let flags = UInt32(MDB_RESERVE) | (append ? UInt32(MDB_APPEND) : 0)
        let operation = append ? "append to" : "put into"
        let target: UnsafeMutableRawBufferPointer = try key.withLMDBBytes { keyBytes throws(LMDBError) in
            try checkKey(keyBytes, "\(operation) \(database.label)")
            var data = MDB_val(mv_size: size, mv_data: nil)
            let rc = withMDBVal(keyBytes) { mdb_put(txn, database.dbi, &$0, &data, flags) }
            guard rc == 0 else { throw failure(rc, "\(operation) \(database.label)") }
            return UnsafeMutableRawBufferPointer(start: data.mv_data, count: size)
        }
        try fill(target)
    }

    /// Removes `key`; returns whether it was present.
    @discardableResult
    public func delete<K: LMDBEncodable, V>(_ key: K, in database: Database<K, V>) throws(LMDBError) -> Bool {
        try key.withLMDBBytes { keyBytes throws(LMDBError) in
            try checkKey(keyBytes, "delete from \(database.label)")
            let rc = withMDBVal(keyBytes) { mdb_del(txn, database.dbi, &$0, nil) }
            if rc == MDB_NOTFOUND { return false }
            guard rc == 0 else { throw failure(rc, "delete from \(database.label)") }
            return true
        }
    }

    /// Removes every entry of `database`, keeping the database itself.
    public func removeAll<K, V>(in database: Database<K, V>) throws(LMDBError) {
        let rc = mdb_drop(txn, database.dbi, 0)
        guard rc == 0 else { throw failure(rc, "empty \(database.label)") }
    }

    private func store<K: LMDBEncodable, V: LMDBEncodable>(
        _ value: V, _ key: K, _ database: Database<K, V>, flags: UInt32, _ operation: @autoclosure () -> String
    ) throws(LMDBError) -> Bool {
        try key.withLMDBBytes { keyBytes throws(LMDBError) in
            try checkKey(keyBytes, operation())
            return try value.withLMDBBytes { valueBytes throws(LMDBError) in
                let rc = withMDBVal(keyBytes) { keyVal in
                    withMDBVal(valueBytes) { valueVal in mdb_put(txn, database.dbi, &keyVal, &valueVal, flags) }
                }
                if rc == MDB_KEYEXIST && flags & UInt32(MDB_NOOVERWRITE) != 0 { return false }
                guard rc == 0 else { throw failure(rc, operation()) }
                return true
            }
        }
    }
}
