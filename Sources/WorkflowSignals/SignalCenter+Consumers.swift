import DurableWorkflow
import Foundation
import Synchronization
import Tracing
import Workflow
import WorkflowStorage

extension SignalCenter {
    // MARK: Consumers

    /// Registers a consumer of `signal` (rule S2) and returns its id. It receives the versions
    /// still retained, then every later one, as its behaviour and coalescing say; attach a
    /// handler with ``attach(_:handler:)`` in the process that owns it.
    @discardableResult
    public func register(
        _ signal: SignalID, owner: String, behaviour: DeliveryBehaviour = .untilTerminated,
        coalescing: Coalescing = .everyVersion, scope: ConsumerScope = .run, id: ConsumerID = ConsumerID()
    ) throws -> ConsumerID {
        let process = ProcessIdentity.current
        let now = WallTime.now().nanosecondsSinceEpoch
        let consumer = ConsumerRecord(
            id: id.uuid, signal: signal.uuid, owner: owner, runID: runID, processIdentity: processIdentity,
            processID: process.pid, processStartTime: process.startTime, behaviour: behaviour,
            coalescing: coalescing, scope: scope, lastDelivered: 0, created: now)
        try storage { () throws(StorageFailure) in _ = try signalStorage.register(consumer, at: now) }
        keepNames(of: [signal])
        return id
    }

    /// Hands the consumer's deliveries to `handler`, in version order, on the dispatcher thread
    /// (or the posting thread: ``SignalConfiguration/deliverOnPostingThread``).
    public func attach(_ consumer: ConsumerID, handler: SignalHandler) {
        dispatcher.attach(consumer, handler: handler)
    }

    /// Stops handing the consumer's deliveries to this process (it stays registered).
    public func detach(_ consumer: ConsumerID) {
        dispatcher.detach(consumer)
    }

    /// Removes a consumer; its signal's record goes too if it was the last one (rule S4).
    public func removeConsumer(_ consumer: ConsumerID) throws {
        let removed = try storage { () throws(StorageFailure) in try signalStorage.removeConsumer(consumer.uuid) }
        guard removed else { throw SignalError(.unknownConsumer, store: path, consumer: consumer, detail: "no consumer has this id") }
        dispatcher.detach(consumer)
    }

    /// Removes every consumer matching `predicate` (and records left without consumers).
    func removeConsumers(where predicate: (ConsumerInfo) -> Bool) throws {
        try storage { () throws(StorageFailure) in _ = try signalStorage.removeConsumers { predicate(ConsumerInfo($0)) } }
    }

    // MARK: Application tables

    /// The application table `name` of this store (created if absent): what a `.transactional`
    /// handler writes there commits with its delivery mark. Open tables before attaching the
    /// handlers that use them. With LMDB each table is a named database of the store's
    /// environment, which allows `StoreConfiguration.environment.maxDatabases` (32 by default;
    /// the store's own use 11): keep to a few tables, each holding many keys.
    public func table(named name: String) throws -> StorageTable {
        try storage { () throws(StorageFailure) in try signalStorage.table(named: name) }
    }

    /// Every entry of an application table, in key order.
    public func entries(in table: StorageTable) throws -> [(key: [UInt8], value: [UInt8])] {
        try storage { () throws(StorageFailure) in try signalStorage.entries(in: table) }
    }
}
