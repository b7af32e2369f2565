import Foundation

/// Where a store keeps its signals: records, versions, consumers with their positions, and
/// idempotency keys (rules S1-S7), in the engine's terms. Every ``StorageBackend`` provides one
/// (``StorageBackend/signalStorage()``), and delivery marks committed with log entries
/// (``InstanceChanges/deliveryMarks``) go to the same place, in the same transaction.
///
/// The rules every implementation keeps, as the contract suite checks:
/// - a post appends version latest + 1 of its signal (a record is created at the first post or
///   registration); a post with an idempotency key already used appends nothing and returns the
///   version that key made;
/// - versions every consumer of a signal has received are pruned, except the newest
///   `keepLatest`; a signal's record and versions go with its last consumer;
/// - a mark moves a consumer's position forward only (a mark at or below it does nothing, so a
///   mark never applies twice); a `.once` consumer, or any consumer given a terminating version,
///   is removed by its mark.
///
/// Thread-safe; a call may block the calling thread for its I/O.
public protocol SignalStorage: AnyObject, Sendable {
    /// Appends the posts in one transaction, as durable as `durability` says (`nil`: the
    /// store's own); returns each post's version.
    func post(_ posts: [SignalPostRecord], keepLatest: Int, at time: Int64, durability: CommitDurability?) throws(StorageFailure) -> [UInt64]

    /// Registers `consumer` (a record for its signal is created if absent); returns false and
    /// changes nothing when a consumer with its id exists.
    @discardableResult
    func register(_ consumer: ConsumerRecord, at time: Int64) throws(StorageFailure) -> Bool
    /// Removes the consumer (and its signal's record and versions when it was the last); whether it existed.
    @discardableResult
    func removeConsumer(_ id: UUID) throws(StorageFailure) -> Bool
    /// Removes, in one transaction, every consumer for which `predicate` holds; how many. A
    /// backend shared by several machines offers only the consumers registered from this one (a
    /// predicate that judges runs by process liveness can see only this machine's processes).
    @discardableResult
    func removeConsumers(where predicate: (ConsumerRecord) -> Bool) throws(StorageFailure) -> Int

    /// The consumer with this id, or `nil`.
    func consumer(_ id: UUID) throws(StorageFailure) -> ConsumerRecord?
    /// Every consumer, in id order.
    func consumers() throws(StorageFailure) -> [ConsumerRecord]

    /// Keeps the stable names signals were made from (`SignalID(stableName:)`), for operators'
    /// tools: only for signals that have a record (a name goes with its record); a signal
    /// already named keeps its name. Need not be synced.
    func nameSignals(_ names: [UUID: String]) throws(StorageFailure)
    /// The stable names kept, by signal.
    func signalNames() throws(StorageFailure) -> [UUID: String]
    /// Every signal record, in id order.
    func signals() throws(StorageFailure) -> [SignalSummary]
    /// The retained versions of `signal`, oldest first; `nil` when it has no record.
    func versions(of signal: UUID) throws(StorageFailure) -> [SignalVersionRecord]?
    /// The consumer and the next version to hand it (the newest one for `.latestOnly`), read in
    /// one snapshot; `nil` when the consumer is gone or up to date.
    func nextDelivery(for consumer: UUID) throws(StorageFailure) -> PendingVersion?

    /// Applies `mark` in a transaction of its own.
    func mark(_ mark: DeliveryMarkRecord, durability: CommitDurability?) throws(StorageFailure)
    /// Runs `body` and applies `mark` in one transaction, unless the consumer is gone or already
    /// past the version (then `body` does not run and the result is false). The application
    /// tables `body` writes through its handle commit with the mark, or not at all when `body`
    /// throws (its error is rethrown as it is). `body` may run more than once (a transaction
    /// retried after the store grew) and must not call the store otherwise.
    func deliver(_ mark: DeliveryMarkRecord, durability: CommitDurability?, _ body: (any StorageTransaction) throws -> Void) throws -> Bool

    /// The application table `name` (created if absent), for ``StorageTransaction``s and ``entries(in:)``.
    func table(named name: String) throws(StorageFailure) -> StorageTable
    /// Every entry of `table`, in key order (for inspection and tests; small tables).
    func entries(in table: StorageTable) throws(StorageFailure) -> [(key: [UInt8], value: [UInt8])]

    /// A new subscription to the store's changes, for one dispatcher.
    func changeFeed() -> any ChangeFeed
}

extension SignalStorage {
    /// A backend of a user's own that keeps no names shows none.
    public func nameSignals(_ names: [UUID: String]) throws(StorageFailure) {}

    public func signalNames() throws(StorageFailure) -> [UUID: String] { [:] }
}
