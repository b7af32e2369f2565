#if Postgres
import Foundation
import PostgresNIO
import WorkflowStorage

/// The signals of a ``PostgresStorage``: tables in the store's schema, written by procedures
/// that commit inside (one round trip each), with the same rules as every backend's (the
/// contract suite checks them). Delivery marks committed with log entries apply in the commit
/// procedure's transaction.
final class PostgresSignalStorage: SignalStorage {
    let storage: PostgresStorage

    init(storage: PostgresStorage) {
        self.storage = storage
    }

    private var schema: String { storage.schema }

    /// The columns of `sig_consumer` that make a ``ConsumerRecord``, in the order ``consumerRecord(_:)`` reads.
    static let consumerColumns =
        "consumer_id, signal_id, owner, run_id, process_identity, process_id, process_start, behaviour, coalescing, scope, last_delivered, created_ns"

    /// ``consumerColumns``, each prefixed with `c.` (for queries that join other tables).
    static let qualifiedConsumerColumns = qualified(consumerColumns, by: "c")

    // MARK: Writes

    func post(_ posts: [SignalPostRecord], keepLatest: Int, at time: Int64, durability: CommitDurability?) throws(StorageFailure) -> [UInt64] {
        guard !posts.isEmpty else { return [] }
        let signals = posts.map(\.signal), payloads = posts.map { ByteBuffer(bytes: $0.payload) }, terminates = posts.map(\.terminates)
        let keys = posts.map { $0.idempotencyKey ?? "" }, hasKeys = posts.map { $0.idempotencyKey != nil }
        let contexts = posts.map { ByteBuffer(bytes: $0.traceContext.encoded) }
        let synced = durability != .processCrashSafe
        let versions = try storage.write("post signals") { connection -> [Int64] in
            let rows = try self.storage.rows(
                """
                CALL \(unescaped: self.schema).sig_post(\(synced), \(signals), \(payloads), \(terminates), \(keys), \(hasKeys), \
                \(contexts), \(Int32(clamping: keepLatest)), \(time), NULL)
                """, on: connection)
            return try rows.first?.decode([Int64].self) ?? []
        }
        return versions.map { UInt64(bitPattern: $0) }
    }

    func register(_ consumer: ConsumerRecord, at time: Int64) throws(StorageFailure) -> Bool {
        try storage.write("register consumer") { connection -> Bool in
            let rows = try self.storage.rows(
                """
                CALL \(unescaped: self.schema).sig_register(\(consumer.id), \(consumer.signal), \(consumer.owner), \(consumer.runID), \
                \(consumer.processIdentity), \(consumer.processID), \(Int64(bitPattern: consumer.processStartTime)), \
                \(Self.code(consumer.behaviour)), \(Self.code(consumer.coalescing)), \(Self.code(consumer.scope)), \
                \(Int64(bitPattern: consumer.lastDelivered)), \(consumer.created), \(time), \(self.storage.configuration.machine), NULL)
                """, on: connection)
            return try rows.first?.decode(Bool.self) ?? false
        }
    }

    func removeConsumer(_ id: UUID) throws(StorageFailure) -> Bool {
        try remove([id]) == 1
    }

    /// Only the consumers registered from this machine are considered: the engine's predicates
    /// judge runs by process liveness, which only their own machine can see.
    func removeConsumers(where predicate: (ConsumerRecord) -> Bool) throws(StorageFailure) -> Int {
        let local = try storage.run("list consumers") { connection -> [ConsumerRecord] in
            try self.storage.rows(
                """
                SELECT \(unescaped: Self.consumerColumns) FROM \(unescaped: self.schema).sig_consumer
                 WHERE machine = \(self.storage.configuration.machine) OR machine = '' ORDER BY consumer_id
                """, on: connection
            ).map { try Self.consumerRecord($0) }
        }
        let doomed = local.filter(predicate).map(\.id)
        return doomed.isEmpty ? 0 : try remove(doomed)
    }

    private func remove(_ ids: [UUID]) throws(StorageFailure) -> Int {
        try storage.write("remove consumers") { connection -> Int in
            let rows = try self.storage.rows("CALL \(unescaped: self.schema).sig_remove_consumers(\(ids), NULL)", on: connection)
            return Int(try rows.first?.decode(Int32.self) ?? 0)
        }
    }

    func mark(_ mark: DeliveryMarkRecord, durability: CommitDurability?) throws(StorageFailure) {
        let synced = durability != .processCrashSafe
        try storage.write("mark delivery") { connection in
            _ = try self.storage.rows(
                """
                CALL \(unescaped: self.schema).sig_mark(\(synced), \(mark.consumer), \(Int64(bitPattern: mark.version)), \(mark.terminates), \
                \(Int32(clamping: mark.keepLatest)), NULL)
                """, on: connection)
        }
    }

    func deliver(_ mark: DeliveryMarkRecord, durability: CommitDurability?, _ body: (any StorageTransaction) throws -> Void) throws -> Bool {
        let delivered = try storage.transaction("deliver") { connection -> Bool in
            if durability == .processCrashSafe { try self.storage.execute("SET LOCAL synchronous_commit = off", on: connection) }
            let rows = try self.storage.rows(
                "SELECT last_delivered FROM \(unescaped: self.schema).sig_consumer WHERE consumer_id = \(mark.consumer) FOR UPDATE",
                on: connection)
            guard let last = try rows.first?.decode(Int64.self), UInt64(bitPattern: last) < mark.version else { return false }
            let transaction = PostgresTransaction(storage: self.storage, connection: connection)
            defer { transaction.end() }
            try body(transaction)
            _ = try self.storage.rows(
                """
                SELECT \(unescaped: self.schema).sig_apply_mark(\(mark.consumer), \(Int64(bitPattern: mark.version)), \(mark.terminates), \
                \(Int32(clamping: mark.keepLatest)))
                """, on: connection)
            return true
        }
        if delivered { storage.changes.noteCommit() }
        return delivered
    }

    func table(named name: String) throws(StorageFailure) -> StorageTable {
        let id = try storage.write("open table") { connection -> Int64 in
            let rows = try self.storage.rows("CALL \(unescaped: self.schema).app_table_named(\(name), NULL)", on: connection)
            guard let id = try rows.first?.decode(Int64.self) else { throw DamagedRow(detail: "table \(name) has no id") }
            return id
        }
        return StorageTable(name: name, handle: UInt64(bitPattern: id))
    }

    // MARK: Reads

    func entries(in table: StorageTable) throws(StorageFailure) -> [(key: [UInt8], value: [UInt8])] {
        try storage.run("read table") { connection -> [(key: [UInt8], value: [UInt8])] in
            try self.storage.rows(
                "SELECT key, value FROM \(unescaped: self.schema).app_entry WHERE table_id = \(Int64(bitPattern: table.handle)) ORDER BY key",
                on: connection
            ).map { row in
                let (key, value) = try row.decode((ByteBuffer, ByteBuffer).self)
                return (Array(key.readableBytesView), Array(value.readableBytesView))
            }
        }
    }

    func consumer(_ id: UUID) throws(StorageFailure) -> ConsumerRecord? {
        try storage.run("read consumer") { connection -> ConsumerRecord? in
            try self.storage.rows(
                "SELECT \(unescaped: Self.consumerColumns) FROM \(unescaped: self.schema).sig_consumer WHERE consumer_id = \(id)", on: connection
            ).first.map { try Self.consumerRecord($0) }
        }
    }

    func consumers() throws(StorageFailure) -> [ConsumerRecord] {
        try storage.run("list consumers") { connection -> [ConsumerRecord] in
            try self.storage.rows(
                "SELECT \(unescaped: Self.consumerColumns) FROM \(unescaped: self.schema).sig_consumer ORDER BY consumer_id", on: connection
            ).map { try Self.consumerRecord($0) }
        }
    }

    func nameSignals(_ names: [UUID: String]) throws(StorageFailure) {
        guard !names.isEmpty else { return }
        var ids = PostgresArrayParameter.uuid(), texts = PostgresArrayParameter.text()
        for (signal, name) in names.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            ids.append(signal)
            texts.append(name)
        }
        try storage.write("name signals") { connection in
            _ = try self.storage.rows(
                """
                INSERT INTO \(unescaped: self.schema).sig_name (signal_id, name)
                SELECT n.id, n.name FROM unnest(\(ids), \(texts)) AS n (id, name)
                 WHERE EXISTS (SELECT 1 FROM \(unescaped: self.schema).sig_signal s WHERE s.signal_id = n.id)
                ON CONFLICT (signal_id) DO NOTHING
                """, on: connection)
        }
    }

    func signalNames() throws(StorageFailure) -> [UUID: String] {
        try storage.run("read signal names") { connection -> [UUID: String] in
            var names: [UUID: String] = [:]
            for row in try self.storage.rows("SELECT signal_id, name FROM \(unescaped: self.schema).sig_name", on: connection) {
                let (id, name) = try row.decode((UUID, String).self)
                names[id] = name
            }
            return names
        }
    }

    func signals() throws(StorageFailure) -> [SignalSummary] {
        try storage.run("list signals") { connection -> [SignalSummary] in
            try self.storage.rows(
                """
                SELECT s.signal_id, s.latest, s.created_ns, s.updated_ns,
                       COALESCE((SELECT array_agg(v.version ORDER BY v.version) FROM \(unescaped: self.schema).sig_version v
                                  WHERE v.signal_id = s.signal_id), '{}'),
                       (SELECT count(*) FROM \(unescaped: self.schema).sig_consumer c WHERE c.signal_id = s.signal_id)
                  FROM \(unescaped: self.schema).sig_signal s ORDER BY s.signal_id
                """, on: connection
            ).map { row in
                let (id, latest, created, updated, versions, consumers) = try row.decode((UUID, Int64, Int64, Int64, [Int64], Int64).self)
                return SignalSummary(
                    id: id, latestVersion: UInt64(bitPattern: latest), retainedVersions: versions.map { UInt64(bitPattern: $0) },
                    consumers: Int(consumers), created: created, updated: updated)
            }
        }
    }

    func versions(of signal: UUID) throws(StorageFailure) -> [SignalVersionRecord]? {
        try storage.run("read versions") { connection -> [SignalVersionRecord]? in
            let rows = try self.storage.rows(
                """
                SELECT v.version, v.payload, v.terminates, v.posted_ns, v.trace_context
                  FROM \(unescaped: self.schema).sig_signal s
                  LEFT JOIN \(unescaped: self.schema).sig_version v ON v.signal_id = s.signal_id
                 WHERE s.signal_id = \(signal) ORDER BY v.version
                """, on: connection)
            guard !rows.isEmpty else { return nil }
            return try rows.compactMap { row -> SignalVersionRecord? in
                let (version, payload, terminates, posted, context) = try row.decode((Int64?, ByteBuffer?, Bool?, Int64?, ByteBuffer?).self)
                guard let version, let payload, let terminates, let posted else { return nil }
                return SignalVersionRecord(
                    signal: signal, version: UInt64(bitPattern: version), payload: Array(payload.readableBytesView), terminates: terminates,
                    posted: posted, traceContext: try Self.traceContext(context))
            }
        }
    }

    func nextDelivery(for consumer: UUID) throws(StorageFailure) -> PendingVersion? {
        // One statement: the consumer, its signal's record and the version are read in one snapshot.
        try storage.run("read next delivery") { connection -> PendingVersion? in
            let rows = try self.storage.rows(
                """
                SELECT \(unescaped: Self.qualifiedConsumerColumns),
                       v.version, v.payload, v.terminates, v.posted_ns, v.trace_context
                  FROM \(unescaped: self.schema).sig_consumer c
                  JOIN \(unescaped: self.schema).sig_signal s ON s.signal_id = c.signal_id
                  JOIN LATERAL (
                       SELECT version, payload, terminates, posted_ns, trace_context FROM \(unescaped: self.schema).sig_version
                        WHERE signal_id = c.signal_id
                          AND version >= CASE WHEN c.coalescing = 1 THEN s.latest ELSE c.last_delivered + 1 END
                        ORDER BY version LIMIT 1) v ON true
                 WHERE c.consumer_id = \(consumer) AND s.latest > c.last_delivered
                """, on: connection)
            guard let row = rows.first else { return nil }
            let record = try Self.consumerRecord(row)
            let random = row.makeRandomAccess()
            let version = try random[12].decode(Int64.self), payload = try random[13].decode(ByteBuffer.self)
            let terminates = try random[14].decode(Bool.self), posted = try random[15].decode(Int64.self)
            let context = try random[16].decode(ByteBuffer?.self)
            return PendingVersion(
                consumer: record,
                version: SignalVersionRecord(
                    signal: record.signal, version: UInt64(bitPattern: version), payload: Array(payload.readableBytesView),
                    terminates: terminates, posted: posted, traceContext: try Self.traceContext(context)))
        }
    }

    func changeFeed() -> any ChangeFeed {
        storage.changes.subscribe()
    }

    // MARK: Values

    /// The first 12 columns of `row` (``consumerColumns``) as a ``ConsumerRecord``.
    static func consumerRecord(_ row: PostgresRow) throws -> ConsumerRecord {
        let columns = row.makeRandomAccess()
        let id = try columns[0].decode(UUID.self), signal = try columns[1].decode(UUID.self)
        let owner = try columns[2].decode(String.self), run = try columns[3].decode(String.self)
        let identity = try columns[4].decode(String.self), pid = try columns[5].decode(Int32.self), start = try columns[6].decode(Int64.self)
        let behaviour = try columns[7].decode(Int16.self), coalescing = try columns[8].decode(Int16.self), scope = try columns[9].decode(Int16.self)
        let last = try columns[10].decode(Int64.self), created = try columns[11].decode(Int64.self)
        return ConsumerRecord(
            id: id, signal: signal, owner: owner, runID: run, processIdentity: identity, processID: pid,
            processStartTime: UInt64(bitPattern: start), behaviour: behaviour == 0 ? .once : .untilTerminated,
            coalescing: coalescing == 1 ? .latestOnly : .everyVersion, scope: scope == 0 ? .run : .durable,
            lastDelivered: UInt64(bitPattern: last), created: created)
    }

    /// A version's stored trace context (`NULL`: none).
    static func traceContext(_ bytes: ByteBuffer?) throws -> TraceContext {
        guard let bytes else { return TraceContext() }
        guard let context = TraceContext(encoded: Array(bytes.readableBytesView)) else {
            throw DamagedRow(detail: "a signal version's trace context (\(bytes.readableBytes) bytes) is not in the stored form")
        }
        return context
    }

    static func code(_ behaviour: DeliveryBehaviour) -> Int16 { behaviour == .once ? 0 : 1 }
    static func code(_ coalescing: Coalescing) -> Int16 { coalescing == .latestOnly ? 1 : 0 }
    static func code(_ scope: ConsumerScope) -> Int16 { scope == .run ? 0 : 1 }
}
#endif
