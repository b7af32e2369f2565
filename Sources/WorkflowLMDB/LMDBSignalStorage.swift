import Foundation
import LMDB
import WorkflowLocks
import WorkflowStorage

/// The signals of an LMDB store, in databases of the store's environment (``SignalLayout``):
/// posts, registrations and marks are LMDB write transactions; reads are snapshots. Delivery
/// marks committed with log entries are applied by ``LMDBStorage/commit(_:)`` in its transaction.
final class LMDBSignalStorage: SignalStorage {
    let environment: Environment
    let layout: SignalLayout
    /// The application tables opened through ``table(named:)``: only those are used inside a
    /// transaction (opening a database there would wait on the transaction itself).
    private let tables = Lock<[String: Database<[UInt8], [UInt8]>]>([:])

    init(environment: Environment) throws(LMDBError) {
        self.environment = environment
        self.layout = try SignalLayout(environment: environment)
    }

    private func call<R>(_ body: () throws -> R) throws(StorageFailure) -> R {
        try callLMDB(at: environment.path, body)
    }

    private static func lmdb(_ durability: CommitDurability?) -> EnvironmentConfiguration.Durability? {
        switch durability {
        case nil: nil
        case .synced?: .strict
        case .processCrashSafe?: .noSync
        }
    }

    // MARK: Writing

    func post(_ posts: [SignalPostRecord], keepLatest: Int, at time: Int64, durability: CommitDurability?) throws(StorageFailure) -> [UInt64] {
        let layout = self.layout
        return try call {
            try environment.write(durability: Self.lmdb(durability)) { txn in
                try posts.map { post in
                    if let key = post.idempotencyKey,
                       let earlier = try txn.value(forKey: key, in: layout.idempotency, {
                           $0.count == 24 ? UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) : nil
                       }) {
                        return earlier
                    }
                    let recordKey = post.signal.bytes
                    var record = try txn.value(forKey: recordKey, in: layout.records) { SignalRecordBytes.decode($0) }
                        ?? SignalRecordBytes(latestVersion: 0, created: time, updated: time)
                    record.latestVersion += 1
                    record.updated = time
                    let versionKey = SignalLayout.versionKey(post.signal, record.latestVersion)
                    try txn.put(StoredVersionBytes.encode(terminates: post.terminates, posted: time, traceContext: post.traceContext,
                                                     payload: post.payload),
                                forKey: versionKey, in: layout.versions)
                    try txn.put(record.encoded(), forKey: recordKey, in: layout.records)
                    if let key = post.idempotencyKey { try txn.put(versionKey, forKey: key, in: layout.idempotency) }
                    try Self.prune(post.signal, latest: record.latestVersion, keepLatest: keepLatest, layout: layout, txn)
                    return record.latestVersion
                }
            }
        }
    }

    func register(_ consumer: ConsumerRecord, at time: Int64) throws(StorageFailure) -> Bool {
        let layout = self.layout
        return try call {
            try environment.write { txn in
                let id = consumer.id.bytes, signal = consumer.signal.bytes
                guard try txn.insert(consumer.encoded(), forKey: id, in: layout.consumers) else { return false }
                try txn.put([0], forKey: signal + id, in: layout.bySignal)
                if try !txn.contains(signal, in: layout.records) {
                    try txn.put(SignalRecordBytes(latestVersion: 0, created: time, updated: time).encoded(), forKey: signal, in: layout.records)
                }
                return true
            }
        }
    }

    func removeConsumer(_ id: UUID) throws(StorageFailure) -> Bool {
        let layout = self.layout
        return try call {
            try environment.write { txn in
                guard let consumer = try Self.consumer(id, layout: layout, txn) else { return false }
                try Self.remove(consumer, layout: layout, txn)
                return true
            }
        }
    }

    func removeConsumers(where predicate: (ConsumerRecord) -> Bool) throws(StorageFailure) -> Int {
        let layout = self.layout
        return try call {
            try environment.write { txn in
                var doomed: [ConsumerRecord] = []
                try txn.forEach(in: layout.consumers) { key, value in
                    if let consumer = ConsumerRecord.decode(id: UUID(bytes: key), value), predicate(consumer) { doomed.append(consumer) }
                    return true
                }
                for consumer in doomed { try Self.remove(consumer, layout: layout, txn) }
                return doomed.count
            }
        }
    }

    func mark(_ mark: DeliveryMarkRecord, durability: CommitDurability?) throws(StorageFailure) {
        let layout = self.layout
        try call { try environment.write(durability: Self.lmdb(durability)) { txn in try Self.apply(mark, layout: layout, txn) } }
    }

    func deliver(_ mark: DeliveryMarkRecord, durability: CommitDurability?, _ body: (any StorageTransaction) throws -> Void) throws -> Bool {
        let layout = self.layout, tables = self.tables.withLock { $0 }, path = environment.path
        do {
            return try environment.write(durability: Self.lmdb(durability)) { txn in
                // Another process may have delivered it meanwhile: checked inside the transaction.
                guard let consumer = try Self.consumer(mark.consumer, layout: layout, txn), consumer.lastDelivered < mark.version else {
                    return false
                }
                try txn.withReference { reference in
                    try body(LMDBTransaction(reference: reference, tables: tables, path: path))
                }
                try Self.apply(mark, layout: layout, txn)
                return true
            }
        } catch let error as LMDBError {
            throw error.storageFailure
        }
    }

    // MARK: Reading

    func consumer(_ id: UUID) throws(StorageFailure) -> ConsumerRecord? {
        let layout = self.layout
        return try call { try environment.read { txn in try Self.consumer(id, layout: layout, txn) } }
    }

    func consumers() throws(StorageFailure) -> [ConsumerRecord] {
        let layout = self.layout
        return try call {
            try environment.read { txn in
                var consumers: [ConsumerRecord] = []
                try txn.forEach(in: layout.consumers) { key, value in
                    if let consumer = ConsumerRecord.decode(id: UUID(bytes: key), value) { consumers.append(consumer) }
                    return true
                }
                return consumers
            }
        }
    }

    /// Not synced: a name is for operators, and one a crash loses is kept again by the next post
    /// or wait that gives it.
    func nameSignals(_ names: [UUID: String]) throws(StorageFailure) {
        guard !names.isEmpty else { return }
        let layout = self.layout
        try call {
            try environment.write(durability: Self.lmdb(.processCrashSafe)) { txn in
                for (signal, name) in names
                where try txn.contains(signal.bytes, in: layout.records) && !txn.contains(signal.bytes, in: layout.names) {
                    try txn.put(Array(name.utf8), forKey: signal.bytes, in: layout.names)
                }
            }
        }
    }

    func signalNames() throws(StorageFailure) -> [UUID: String] {
        let layout = self.layout
        return try call {
            try environment.read { txn in
                var names: [UUID: String] = [:]
                try txn.forEach(in: layout.names) { key, value in
                    if key.count == 16 { names[UUID(bytes: key)] = String(decoding: value, as: UTF8.self) }
                    return true
                }
                return names
            }
        }
    }

    func signals() throws(StorageFailure) -> [SignalSummary] {
        let layout = self.layout
        return try call {
            try environment.read { txn in
                var summaries: [SignalSummary] = []
                try txn.forEach(in: layout.records) { key, value in
                    guard key.count == 16, let record = SignalRecordBytes.decode(value) else { return true }
                    let signal = UUID(bytes: key)
                    summaries.append(SignalSummary(
                        id: signal, latestVersion: record.latestVersion,
                        retainedVersions: try Self.retained(signal, layout: layout, txn).map(\.version),
                        consumers: try Self.consumerIDs(of: signal, layout: layout, txn).count,
                        created: record.created, updated: record.updated))
                    return true
                }
                return summaries
            }
        }
    }

    func versions(of signal: UUID) throws(StorageFailure) -> [SignalVersionRecord]? {
        let layout = self.layout
        return try call {
            try environment.read { txn in
                guard try txn.contains(signal.bytes, in: layout.records) else { return nil }
                return try Self.retained(signal, layout: layout, txn)
            }
        }
    }

    func nextDelivery(for consumerID: UUID) throws(StorageFailure) -> PendingVersion? {
        let layout = self.layout
        return try call {
            try environment.read { txn -> PendingVersion? in
                guard let consumer = try Self.consumer(consumerID, layout: layout, txn),
                      let record = try txn.value(forKey: consumer.signal.bytes, in: layout.records, { SignalRecordBytes.decode($0) }),
                      record.latestVersion > consumer.lastDelivered else { return nil }
                let start = consumer.coalescing == .latestOnly ? record.latestVersion : consumer.lastDelivered + 1
                var found: SignalVersionRecord?
                let prefix = consumer.signal.bytes
                try txn.forEach(in: layout.versions, from: SignalLayout.versionKey(consumer.signal, start)) { key, value in
                    guard key.count == 24, key.prefix(16).elementsEqual(prefix) else { return false }
                    found = StoredVersionBytes.decode(signal: consumer.signal, key: key, value)
                    return false
                }
                return found.map { PendingVersion(consumer: consumer, version: $0) }
            }
        }
    }

    // MARK: Application tables

    func table(named name: String) throws(StorageFailure) -> StorageTable {
        let database: Database<[UInt8], [UInt8]> = try call { try environment.database(named: "table." + name) }
        tables.withLock { $0[name] = database }
        return StorageTable(name: name, handle: 0)
    }

    func entries(in table: StorageTable) throws(StorageFailure) -> [(key: [UInt8], value: [UInt8])] {
        guard let database = tables.withLock({ $0[table.name] }) else { throw LMDBTransaction.unknown(table, path: environment.path) }
        return try call {
            try environment.read { txn in
                var entries: [(key: [UInt8], value: [UInt8])] = []
                try txn.forEach(in: database) { key, value in
                    entries.append((Array(key), Array(value)))
                    return true
                }
                return entries
            }
        }
    }

    func changeFeed() -> any ChangeFeed {
        LMDBChangeFeed(environment: environment)
    }

    // MARK: Primitives inside a transaction (also used by commits)

    static func consumer(_ id: UUID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> ConsumerRecord? {
        try txn.value(forKey: id.bytes, in: layout.consumers) { ConsumerRecord.decode(id: id, $0) }
    }

    /// Whether `mark`'s consumer exists and already has its version.
    static func isDelivered(_ mark: DeliveryMarkRecord, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws -> Bool {
        try consumer(mark.consumer, layout: layout, txn).map { $0.lastDelivered >= mark.version } ?? false
    }

    /// Marks the version delivered and applies the removal rules (S4); a no-op when the
    /// consumer is gone or already past the version (so a mark can never apply twice).
    static func apply(_ mark: DeliveryMarkRecord, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        guard var consumer = try consumer(mark.consumer, layout: layout, txn), consumer.lastDelivered < mark.version else { return }
        consumer.lastDelivered = mark.version
        if consumer.behaviour == .once || mark.terminates {
            try remove(consumer, layout: layout, txn)
        } else {
            try txn.put(consumer.encoded(), forKey: consumer.id.bytes, in: layout.consumers)
            let latest = try txn.value(forKey: consumer.signal.bytes, in: layout.records) { SignalRecordBytes.decode($0)?.latestVersion }
            try prune(consumer.signal, latest: latest ?? mark.version, keepLatest: mark.keepLatest, layout: layout, txn)
        }
    }

    /// Removes `consumer`; removes its signal's record and versions if no consumer is left.
    static func remove(_ consumer: ConsumerRecord, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        try txn.delete(consumer.id.bytes, in: layout.consumers)
        try txn.delete(consumer.signal.bytes + consumer.id.bytes, in: layout.bySignal)
        if try consumerIDs(of: consumer.signal, layout: layout, txn).isEmpty {
            try txn.delete(consumer.signal.bytes, in: layout.records)
            try txn.delete(consumer.signal.bytes, in: layout.names)
            try deleteVersions(of: consumer.signal, through: .max, layout: layout, txn)
        }
    }

    static func consumerIDs(of signal: UUID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> [UUID] {
        var ids: [UUID] = []
        let prefix = signal.bytes
        try txn.forEach(in: layout.bySignal, from: prefix) { key, _ in
            guard key.count == 32, key.prefix(16).elementsEqual(prefix) else { return false }
            ids.append(UUID(bytes: UnsafeRawBufferPointer(rebasing: key[16..<32])))
            return true
        }
        return ids
    }

    /// Drops versions every consumer has, keeping the newest `keepLatest`.
    static func prune(_ signal: UUID, latest: UInt64, keepLatest: Int, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        let ids = try consumerIDs(of: signal, layout: layout, txn)
        var needed = UInt64.max
        for id in ids {
            if let consumer = try consumer(id, layout: layout, txn) { needed = min(needed, consumer.lastDelivered) }
        }
        let keepFrom = latest >= UInt64(keepLatest) ? latest - UInt64(keepLatest) : 0
        let through = ids.isEmpty ? keepFrom : min(needed, keepFrom)
        if through > 0 { try deleteVersions(of: signal, through: through, layout: layout, txn) }
    }

    static func deleteVersions(of signal: UUID, through last: UInt64, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        let prefix = signal.bytes
        try txn.withCursor(on: layout.versions) { cursor in
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.count == 24, current.key.prefix(16).elementsEqual(prefix),
                  UInt64(bigEndian: current.key.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) <= last {
                try cursor.deleteCurrent()
                entry = try cursor.current()
            }
        }
    }

    static func retained(_ signal: UUID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> [SignalVersionRecord] {
        var versions: [SignalVersionRecord] = []
        let prefix = signal.bytes
        try txn.forEach(in: layout.versions, from: prefix) { key, value in
            guard key.count == 24, key.prefix(16).elementsEqual(prefix) else { return false }
            if let version = StoredVersionBytes.decode(signal: signal, key: key, value) { versions.append(version) }
            return true
        }
        return versions
    }
}

/// A transactional handler's transaction on an LMDB store: the write transaction that will
/// also mark the delivery, through a reference that stops working when the handler returns.
final class LMDBTransaction: StorageTransaction {
    private let reference: TransactionReference
    private let tables: [String: Database<[UInt8], [UInt8]>]
    private let path: String

    init(reference: TransactionReference, tables: [String: Database<[UInt8], [UInt8]>], path: String) {
        self.reference = reference
        self.tables = tables
        self.path = path
    }

    static func unknown(_ table: StorageTable, path: String) -> StorageFailure {
        StorageFailure(kind: .invalidInput, backend: "LMDB", location: path, operation: "use table '\(table.name)'",
                       detail: "the table was not opened on this store", recovery: "Open it with the store's table(named:) before the handler runs")
    }

    private func with<R>(_ table: StorageTable, _ body: (borrowing WriteTransaction, Database<[UInt8], [UInt8]>) throws(LMDBError) -> R) throws(StorageFailure) -> R {
        guard let database = tables[table.name] else { throw Self.unknown(table, path: path) }
        do {
            return try reference.withTransaction { (txn) throws(LMDBError) -> R in try body(txn, database) }
        } catch {
            throw error.storageFailure
        }
    }

    func value(forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> [UInt8]? {
        try with(table) { (txn, database) throws(LMDBError) in try txn.get(key, in: database) }
    }

    func put(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) {
        try with(table) { (txn, database) throws(LMDBError) in try txn.put(value, forKey: key, in: database) }
    }

    func insert(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try with(table) { (txn, database) throws(LMDBError) in try txn.insert(value, forKey: key, in: database) }
    }

    func delete(_ key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try with(table) { (txn, database) throws(LMDBError) in try txn.delete(key, in: database) }
    }
}
