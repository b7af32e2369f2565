#if Postgres
import PostgresNIO
import WorkflowLocks
import WorkflowStorage

/// The transaction a transactional signal handler writes application tables in: the store's
/// explicit transaction on one connection, committed with the delivery mark. Valid until the
/// handler returns; a use after that fails with `.invalidInput` and writes nothing.
final class PostgresTransaction: StorageTransaction {
    private let storage: PostgresStorage
    /// The connection while the handler runs; `nil` after.
    private let connection: Lock<PostgresConnection?>

    init(storage: PostgresStorage, connection: PostgresConnection) {
        self.storage = storage
        self.connection = Lock(connection)
    }

    /// Ends the handle's life: later uses fail.
    func end() {
        connection.withLock { $0 = nil }
    }

    func value(forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> [UInt8]? {
        try run("read table entry") { connection -> [UInt8]? in
            let rows = try self.storage.rows(
                """
                SELECT value FROM \(unescaped: self.storage.schema).app_entry
                 WHERE table_id = \(Int64(bitPattern: table.handle)) AND key = \(ByteBuffer(bytes: key))
                """, on: connection)
            return try rows.first.map { Array(try $0.decode(ByteBuffer.self).readableBytesView) }
        }
    }

    func put(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) {
        try run("write table entry") { connection in
            _ = try self.storage.rows(
                """
                INSERT INTO \(unescaped: self.storage.schema).app_entry (table_id, key, value)
                VALUES (\(Int64(bitPattern: table.handle)), \(ByteBuffer(bytes: key)), \(ByteBuffer(bytes: value)))
                ON CONFLICT (table_id, key) DO UPDATE SET value = EXCLUDED.value
                """, on: connection)
        }
    }

    func insert(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try run("insert table entry") { connection -> Bool in
            let rows = try self.storage.rows(
                """
                INSERT INTO \(unescaped: self.storage.schema).app_entry (table_id, key, value)
                VALUES (\(Int64(bitPattern: table.handle)), \(ByteBuffer(bytes: key)), \(ByteBuffer(bytes: value)))
                ON CONFLICT (table_id, key) DO NOTHING RETURNING 1
                """, on: connection)
            return !rows.isEmpty
        }
    }

    func delete(_ key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try run("delete table entry") { connection -> Bool in
            let rows = try self.storage.rows(
                """
                DELETE FROM \(unescaped: self.storage.schema).app_entry
                 WHERE table_id = \(Int64(bitPattern: table.handle)) AND key = \(ByteBuffer(bytes: key)) RETURNING 1
                """, on: connection)
            return !rows.isEmpty
        }
    }

    private func run<Result>(_ operation: String, _ body: (PostgresConnection) throws -> Result) throws(StorageFailure) -> Result {
        guard let connection = connection.withLock({ $0 }) else {
            throw storage.failure(.invalidInput, operation, "the transaction was used after its handler returned",
                                  recovery: "Use the transaction only inside the handler it was given to")
        }
        do {
            return try body(connection)
        } catch {
            throw storage.storageFailure(error, operation: operation)
        }
    }
}
#endif
