/// An application table of a store: keys and values of bytes that a transactional signal
/// handler writes in the same transaction as its delivery mark. Obtained once from
/// ``SignalStorage/table(named:)``, then used in any transaction of that store.
public struct StorageTable: Sendable, Hashable {
    /// Its name.
    public let name: String
    /// The backend's handle on it.
    package let handle: UInt64

    package init(name: String, handle: UInt64) {
        self.name = name
        self.handle = handle
    }
}

/// The transaction a transactional signal handler runs in, whatever the backend: what it
/// writes to application tables commits atomically with the delivery mark (exactly once), or
/// not at all when the handler throws. Valid only while the handler runs: a use after that
/// fails with ``StorageFailure/Kind/invalidInput``. Not `Sendable`: use it on the handler's thread.
public protocol StorageTransaction: AnyObject {
    /// The value stored under `key` in `table`, or `nil`.
    func value(forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> [UInt8]?
    /// Stores `value` under `key`, replacing any value there.
    func put(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure)
    /// Stores `value` under `key` only if the key is absent; whether it was stored.
    @discardableResult
    func insert(_ value: [UInt8], forKey key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool
    /// Removes `key`; whether it was present.
    @discardableResult
    func delete(_ key: [UInt8], in table: StorageTable) throws(StorageFailure) -> Bool
}
