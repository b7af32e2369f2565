import DurableWorkflow
import Foundation
import Synchronization
import Tracing
import Workflow
import WorkflowStorage

/// How a ``SignalCenter`` keeps and delivers signals.
public struct SignalConfiguration: Sendable {
    /// Versions kept for each signal beyond what its consumers still need: the newest
    /// `keepLatest` versions stay, so a consumer registered later still receives them (default 1).
    public var keepLatest: Int
    /// How often the dispatcher checks the store for commits by other processes when no wake-up
    /// arrives (wake-ups are hints; this bounds the delay if one is lost).
    public var pollInterval: Duration
    /// How long a failed handler waits before its version is retried.
    public var retryDelay: Duration
    /// The durability of posts and delivery marks (default `nil`: the store's, synced).
    /// `.processCrashSafe` survives a crash of the process, not of the machine; call
    /// `store.sync()` to flush.
    public var durability: CommitDurability?
    /// How long the dispatcher keeps watching for work after a delivery before it sleeps. A post
    /// in this window (from this process or another) is seen without waking a sleeping thread,
    /// which costs tens of microseconds on a busy or virtual machine; the price is up to this much
    /// CPU time after each burst of deliveries. `.zero` sleeps at once.
    public var spinAfterDelivery: Duration
    /// When the dispatcher is asleep, a post delivers to this process's attached handlers itself,
    /// on the posting thread, before `post` returns: no thread has to be woken (50-100 µs on a
    /// virtual machine), so a sparse signal reaches a local handler in the time of two commits.
    /// Deliveries stay one at a time and in version order per consumer (the posting thread and
    /// the dispatcher take turns), and every guarantee of the handler kinds holds. The price:
    /// handlers run on whichever thread posted, and `post` takes as long as they do. A post made
    /// while a delivery is running (from a handler, or while the dispatcher delivers) leaves it to
    /// the dispatcher. Off by default.
    public var deliverOnPostingThread: Bool
    /// Where the spans of posts and deliveries go (`workflow.signal.post`, `workflow.signal.deliver`;
    /// each version carries its post's trace context to its deliveries, in any process or host):
    /// this tracer, else the one bootstrapped in `InstrumentationSystem` (none: no spans, and
    /// versions carry no context).
    public var tracer: (any Tracer)?

    /// Defaults: keep the latest version, check every 20 ms, retry after 50 ms, strict commits,
    /// watch for 250 µs after a delivery, deliver on the dispatcher thread only, the bootstrapped tracer.
    public init(
        keepLatest: Int = 1, pollInterval: Duration = .milliseconds(20), retryDelay: Duration = .milliseconds(50),
        durability: CommitDurability? = nil, spinAfterDelivery: Duration = .microseconds(250),
        deliverOnPostingThread: Bool = false, tracer: (any Tracer)? = nil
    ) {
        self.keepLatest = keepLatest
        self.pollInterval = pollInterval
        self.retryDelay = retryDelay
        self.durability = durability
        self.spinAfterDelivery = spinAfterDelivery
        self.deliverOnPostingThread = deliverOnPostingThread
        self.tracer = tracer
    }
}

/// What a consumer's handler does with a version, and the guarantee that comes with it.
public enum SignalHandler: Sendable {
    /// The handler's writes to application tables (``SignalCenter/table(named:)``) and the
    /// delivery mark commit in one transaction of the store, whatever its backend: **exactly
    /// once**. If it throws, nothing is written and the version is retried. The transaction is
    /// valid only while the handler runs, and the handler may run again for the same version if
    /// the store retries the transaction (LMDB does after growing its map). The handler must not
    /// call the center or the store (a post from it would wait for its own transaction).
    case transactional(@Sendable (SignalDelivery, any StorageTransaction) throws -> Void)
    /// The mark is written after the handler returns: **at least once** (a crash between the two
    /// redelivers). If it throws, the version is not marked and is retried.
    case atLeastOnce(@Sendable (SignalDelivery) throws -> Void)
    /// The mark is written before the handler runs: **at most once** (a crash between the two
    /// loses the delivery).
    case atMostOnce(@Sendable (SignalDelivery) -> Void)
    /// A durable workflow's wait: the delivery becomes a logged action whose commit writes the
    /// mark (`mark` is attached to the log entry's transaction).
    case workflow(@Sendable (SignalDelivery, DeliveryMark) -> Void)
}

/// Persistent, versioned signals shared by the processes of one host through one store (rules S1-S6).
///
/// Every post appends a new version; consumers registered for a signal get each version after
/// their last delivered one, in order, once (see ``SignalHandler`` for the guarantee of each kind of
/// handler). Handlers are attached in memory, in the process that owns the consumer; a dispatcher
/// thread delivers to them. Another process's post wakes the dispatcher through the store's change
/// feed (with LMDB, a datagram socket in the store's `wake/` directory); the store and the
/// consumers' saved positions are the truth. The signals live in the store's backend
/// (``WorkflowStorage/SignalStorage``): any backend that passes the contract suite, the in-memory
/// one included.
public final class SignalCenter: Sendable {
    /// The store's directory.
    public let path: String
    /// This process's identity (consumers of the same identity from other runs are removed at open).
    public let processIdentity: String
    /// This run's id.
    public let runID: String
    /// The configuration.
    public let configuration: SignalConfiguration
    /// Where the signals are kept: the store's backend's signal storage.
    let signalStorage: any SignalStorage
    let dispatcher: SignalDispatcher
    /// The workflow store whose backend keeps the signals.
    public let store: WorkflowStore

    private init(store: WorkflowStore, processIdentity: String, runID: String, configuration: SignalConfiguration) throws(SignalError) {
        self.store = store
        self.path = store.path
        do {
            self.signalStorage = try store.backend.signalStorage()
        } catch {
            throw SignalError(storage: error, store: store.path)
        }
        self.processIdentity = processIdentity
        self.runID = runID
        self.configuration = configuration
        self.dispatcher = SignalDispatcher(
            path: store.path, signals: signalStorage, readOnly: store.backend.isReadOnly, configuration: configuration)
    }

    deinit {
        dispatcher.stop()
        RunLiveness.end(runID)
    }

    /// Opens the signal subsystem of `store` for a run of `processIdentity`. Run-scoped consumers
    /// of the same process identity left by runs that are provably dead (their process is gone,
    /// is a zombie or is another process with a reused pid, or it is this process and that run
    /// stopped) are removed; the consumers of a live run are never touched, so replicas that
    /// share an identity do not take each other's consumers (rule S5).
    public static func open(
        store: WorkflowStore, processIdentity: String, runID: String = UUID().uuidString,
        configuration: SignalConfiguration = SignalConfiguration()
    ) throws -> SignalCenter {
        let center = try SignalCenter(store: store, processIdentity: processIdentity, runID: runID, configuration: configuration)
        RunLiveness.begin(runID)
        if !store.backend.isReadOnly {
            try center.removeConsumers {
                $0.scope == .run && $0.processIdentity == processIdentity && $0.runID != runID && $0.run.isProvablyDead
            }
        }
        center.dispatcher.start(center: center)
        return center
    }

    /// Ends this run: its run-scoped consumers are removed and the dispatcher stops.
    public func stop() throws {
        dispatcher.stop()
        RunLiveness.end(runID)
        guard !store.backend.isReadOnly else { return }
        try removeConsumers { $0.scope == .run && $0.runID == runID }
    }

    // MARK: Posting

    /// Appends a new version of `signal` and returns its number (rule S1). With an
    /// `idempotencyKey` already used, nothing is posted and the earlier version is returned.
    @discardableResult
    public func post(
        _ signal: SignalID, payload: [UInt8] = [], terminatesConsumersAfterDelivery: Bool = true, idempotencyKey: String? = nil
    ) throws -> UInt64 {
        try post([SignalPost(signal: signal, payload: payload, terminatesConsumersAfterDelivery: terminatesConsumersAfterDelivery,
                             idempotencyKey: idempotencyKey)])[0]
    }

    /// Posts `value` encoded as JSON.
    @discardableResult
    public func post<Value: Encodable>(
        _ signal: SignalID, value: Value, terminatesConsumersAfterDelivery: Bool = true, idempotencyKey: String? = nil
    ) throws -> UInt64 {
        try post(signal, payload: Array(try JSONEncoder().encode(value)),
                 terminatesConsumersAfterDelivery: terminatesConsumersAfterDelivery, idempotencyKey: idempotencyKey)
    }

    /// Posts several versions in one transaction (one commit, one wake-up); returns their versions.
    /// With a tracer, the post is a span (a child of the caller's current one) whose context each
    /// version carries to its deliveries.
    @discardableResult
    public func post(_ posts: [SignalPost]) throws -> [UInt64] {
        let traced = dispatcher.tracing?.startPost(posts)
        let records = posts.map {
            SignalPostRecord(signal: $0.signal.uuid, payload: $0.payload, terminates: $0.terminatesConsumersAfterDelivery,
                             idempotencyKey: $0.idempotencyKey, traceContext: traced?.context ?? TraceContext())
        }
        let versions: [UInt64]
        do {
            versions = try storage { () throws(StorageFailure) in
                try signalStorage.post(records, keepLatest: configuration.keepLatest, at: WallTime.now().nanosecondsSinceEpoch,
                                       durability: configuration.durability)
            }
        } catch {
            traced?.span.recordError(error)
            traced?.span.setStatus(SpanStatus(code: .error))
            traced?.span.end()
            throw error
        }
        if let span = traced?.span {
            if versions.count == 1 { span.attributes["workflow.signal.version"] = Int(versions[0]) }
            span.end()
        }
        dispatcher.didPost()
        return versions
    }

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

    // MARK: Inspection

    /// Every signal record with its retained versions and consumer count.
    public func signals() throws -> [SignalInfo] {
        try storage { () throws(StorageFailure) in try signalStorage.signals() }.map(SignalInfo.init)
    }

    /// The retained versions of `signal`, oldest first.
    public func versions(of signal: SignalID) throws -> [SignalDelivery] {
        guard let versions = try storage({ () throws(StorageFailure) in try signalStorage.versions(of: signal.uuid) }) else {
            throw SignalError(.unknownSignal, store: path, signal: signal, detail: "no signal record has this id",
                              recovery: "List signals with `wfctl signals \(path)`")
        }
        return versions.map { SignalDelivery($0, consumer: nil) }
    }

    /// Every consumer (of `signal`, if given) with its position.
    public func consumers(of signal: SignalID? = nil) throws -> [ConsumerInfo] {
        try storage { () throws(StorageFailure) in try signalStorage.consumers() }
            .filter { signal == nil || $0.signal == signal?.uuid }.map(ConsumerInfo.init)
    }

    /// Every consumer with versions it has not been given yet, and those versions.
    public func pendingDeliveries() throws -> [PendingDelivery] {
        let retained = try storage { () throws(StorageFailure) in
            Dictionary(uniqueKeysWithValues: try signalStorage.signals().map { ($0.id, $0.retainedVersions) })
        }
        return try consumers().compactMap { consumer in
            let waiting = (retained[consumer.signal.uuid] ?? []).filter { $0 > consumer.lastDelivered }
            let versions = consumer.coalescing == .latestOnly ? Array(waiting.suffix(1)) : waiting
            return versions.isEmpty ? nil : PendingDelivery(consumer: consumer, versions: versions)
        }
    }

    /// Runs `body`, turning storage failures into ``SignalError``s naming the store.
    func storage<R>(_ body: () throws(StorageFailure) -> R) throws(SignalError) -> R {
        do {
            return try body()
        } catch {
            throw SignalError(storage: error, store: path)
        }
    }
}

/// One post of a batch.
public struct SignalPost: Sendable {
    public let signal: SignalID
    public let payload: [UInt8]
    public let terminatesConsumersAfterDelivery: Bool
    public let idempotencyKey: String?

    /// A post of `payload` to `signal`.
    public init(signal: SignalID, payload: [UInt8], terminatesConsumersAfterDelivery: Bool = true, idempotencyKey: String? = nil) {
        self.signal = signal
        self.payload = payload
        self.terminatesConsumersAfterDelivery = terminatesConsumersAfterDelivery
        self.idempotencyKey = idempotencyKey
    }
}
