import Foundation

/// The signals of an ``InMemoryStorage``: kept under the store's lock, so a delivery mark in a
/// commit applies atomically with the commit's entries. Not durable, like the store.
final class InMemorySignalStorage: SignalStorage {
    private let storage: InMemoryStorage

    init(storage: InMemoryStorage) {
        self.storage = storage
    }

    func post(_ posts: [SignalPostRecord], keepLatest: Int, at time: Int64, durability: CommitDurability?) throws(StorageFailure) -> [UInt64] {
        try storage.changingSignals("post signals") { signals in posts.map { signals.post($0, keepLatest: keepLatest, at: time) } }
    }

    func register(_ consumer: ConsumerRecord, at time: Int64) throws(StorageFailure) -> Bool {
        try storage.changingSignals("register a consumer") { $0.register(consumer, at: time) }
    }

    func removeConsumer(_ id: UUID) throws(StorageFailure) -> Bool {
        try storage.changingSignals("remove a consumer") { $0.remove(id) }
    }

    func removeConsumers(where predicate: (ConsumerRecord) -> Bool) throws(StorageFailure) -> Int {
        try storage.changingSignals("remove consumers") { signals in
            let doomed = signals.consumers.values.filter(predicate).map(\.id)
            for id in doomed { _ = signals.remove(id) }
            return doomed.count
        }
    }

    func consumer(_ id: UUID) throws(StorageFailure) -> ConsumerRecord? {
        try storage.readingSignals("read a consumer") { $0.consumers[id] }
    }

    func nameSignals(_ names: [UUID: String]) throws(StorageFailure) {
        try storage.changingSignals("name signals") { contents in
            for (signal, name) in names where contents.records[signal] != nil && contents.names[signal] == nil {
                contents.names[signal] = name
            }
        }
    }

    func signalNames() throws(StorageFailure) -> [UUID: String] {
        try storage.readingSignals("read signal names") { $0.names }
    }

    func consumers() throws(StorageFailure) -> [ConsumerRecord] {
        try storage.readingSignals("list consumers") { $0.consumers.values.sorted { $0.id.uuidString < $1.id.uuidString } }
    }

    func signals() throws(StorageFailure) -> [SignalSummary] {
        try storage.readingSignals("list signals") { $0.summaries() }
    }

    func versions(of signal: UUID) throws(StorageFailure) -> [SignalVersionRecord]? {
        try storage.readingSignals("read versions") { $0.records[signal] == nil ? nil : $0.versions[signal] ?? [] }
    }

    func nextDelivery(for consumer: UUID) throws(StorageFailure) -> PendingVersion? {
        try storage.readingSignals("find the next delivery") { $0.next(for: consumer) }
    }

    func mark(_ mark: DeliveryMarkRecord, durability: CommitDurability?) throws(StorageFailure) {
        try storage.changingSignals("mark a delivery") { $0.apply(mark) }
    }

    func deliver(_ mark: DeliveryMarkRecord, durability: CommitDurability?, _ body: (any StorageTransaction) throws -> Void) throws -> Bool {
        // The handler runs on a copy of the contents under the store's lock; the copy replaces
        // them only when the handler returns, so a throwing handler leaves nothing behind.
        try storage.changingSignals("deliver", throwing: { signals throws -> Bool in
            guard let consumer = signals.consumers[mark.consumer], consumer.lastDelivered < mark.version else { return false }
            let transaction = InMemoryTransaction(tables: signals.tables, location: storage.location)
            defer { transaction.end() }
            try body(transaction)
            signals.tables = transaction.tables
            signals.apply(mark)
            return true
        })
    }

    func table(named name: String) throws(StorageFailure) -> StorageTable {
        try storage.changingSignals("open a table") { signals in
            if let handle = signals.tableNames[name] { return StorageTable(name: name, handle: handle) }
            let handle = UInt64(signals.tableNames.count + 1)
            signals.tableNames[name] = handle
            signals.tables[handle] = [:]
            return StorageTable(name: name, handle: handle)
        }
    }

    func entries(in table: StorageTable) throws(StorageFailure) -> [(key: [UInt8], value: [UInt8])] {
        try storage.readingSignals("read a table") { ($0.tables[table.handle] ?? [:]).map { (key: $0.key, value: $0.value) } }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }

    func changeFeed() -> any ChangeFeed {
        InMemoryChangeFeed(storage: storage, subscriber: storage.subscribe())
    }
}

/// A handler's transaction on an in-memory store: a private copy of the application tables.
final class InMemoryTransaction: StorageTransaction {
    fileprivate(set) var tables: [UInt64: [[UInt8]: [UInt8]]]
    private let location: String
    private var ended = false

    init(tables: [UInt64: [[UInt8]: [UInt8]]], location: String) {
        self.tables = tables
        self.location = location
    }

    func end() { ended = true }

    private func check(_ table: StorageTable, _ operation: String) throws(StorageFailure) {
        if ended {
            throw StorageFailure(kind: .invalidInput, backend: "memory", location: location, operation: operation,
                                 detail: "the transaction ended when its handler returned", recovery: "Use the transaction only inside the handler")
        }
        guard tables[table.handle] != nil else {
            throw StorageFailure(kind: .invalidInput, backend: "memory", location: location, operation: operation,
                                 detail: "table '\(table.name)' belongs to another store", recovery: "Open the table from this store's signal storage")
        }
    }

    func value(forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> [UInt8]? {
        try check(table, "read table '\(table.name)'")
        return tables[table.handle]?[key]
    }

    func put(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) {
        try check(table, "put into table '\(table.name)'")
        tables[table.handle]?[key] = value
    }

    func insert(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try check(table, "insert into table '\(table.name)'")
        guard tables[table.handle]?[key] == nil else { return false }
        tables[table.handle]?[key] = value
        return true
    }

    func delete(_ key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool {
        try check(table, "delete from table '\(table.name)'")
        return tables[table.handle]?.removeValue(forKey: key) != nil
    }
}

/// Change hints of an in-memory store: its commit count as the position; wake-ups between the
/// subscribers of this process (there is no other).
struct InMemoryChangeFeed: ChangeFeed {
    final class Subscriber: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        func wake() { semaphore.signal() }
        func wait(timeout: Duration) -> Bool {
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            return semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
        }
    }

    let storage: InMemoryStorage
    let subscriber: Subscriber

    var position: UInt64 { storage.commitCount }
    func wait(timeout: Duration) -> Bool { subscriber.wait(timeout: timeout) }
    func announce() { storage.wakeSubscribers(except: subscriber) }
    func wakeSelf() { subscriber.wake() }
}
