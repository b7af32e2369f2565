import DurableWorkflow
import Foundation
import LMDB
import Synchronization
import Workflow
import WorkflowLMDB
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

    /// Defaults: keep the latest version, check every 20 ms, retry after 50 ms, strict commits,
    /// watch for 250 µs after a delivery, deliver on the dispatcher thread only.
    public init(
        keepLatest: Int = 1, pollInterval: Duration = .milliseconds(20), retryDelay: Duration = .milliseconds(50),
        durability: CommitDurability? = nil, spinAfterDelivery: Duration = .microseconds(250),
        deliverOnPostingThread: Bool = false
    ) {
        self.keepLatest = keepLatest
        self.pollInterval = pollInterval
        self.retryDelay = retryDelay
        self.durability = durability
        self.spinAfterDelivery = spinAfterDelivery
        self.deliverOnPostingThread = deliverOnPostingThread
    }
}

extension SignalConfiguration {
    /// `durability` as the LMDB environment's sync setting for one transaction.
    var lmdbDurability: EnvironmentConfiguration.Durability? {
        switch durability {
        case nil: nil
        case .synced?: .strict
        case .processCrashSafe?: .noSync
        }
    }
}

/// What a consumer's handler does with a version, and the guarantee that comes with it.
public enum SignalHandler: Sendable {
    /// The handler's writes and the delivery mark commit in one LMDB transaction:
    /// **exactly once**. If it throws, nothing is written and the version is retried.
    case transactional(@Sendable (SignalDelivery, borrowing WriteTransaction) throws -> Void)
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
/// thread delivers to them. Another process's post wakes the dispatcher through a datagram socket
/// in the store's `wake/` directory; the store and the consumers' saved positions are the truth.
public final class SignalCenter: Sendable {
    /// The store's directory.
    public let path: String
    /// This process's identity (consumers of the same identity from other runs are removed at open).
    public let processIdentity: String
    /// This run's id.
    public let runID: String
    /// The configuration.
    public let configuration: SignalConfiguration
    let environment: Environment
    let layout: SignalLayout
    let dispatcher: SignalDispatcher
    /// The workflow store whose environment the signals share.
    public let store: WorkflowStore

    private init(store: WorkflowStore, processIdentity: String, runID: String, configuration: SignalConfiguration) throws {
        guard let lmdb = store.lmdb else {
            throw SignalError(.storage, store: store.path, detail: "signals are kept in LMDB stores only, for now (this store is kept by \(store.backend.name))",
                              recovery: "Open the store with WorkflowStore.open(path:)")
        }
        self.store = store
        self.path = store.path
        self.environment = lmdb.environment
        let layout = try SignalLayout(environment: lmdb.environment)
        self.layout = layout
        // Delivery marks arrive as data in the commits of durable hosts; they are applied here,
        // inside the commit's transaction.
        lmdb.deliveryMarkWriter.withLock { writer in
            writer = { mark, txn in
                let consumer = mark.consumer.withUnsafeBytes { ConsumerID(bytes: $0) }
                try SignalCenter.mark(consumer, version: mark.version, terminates: mark.terminates, keepLatest: mark.keepLatest, layout: layout, txn)
            }
        }
        self.processIdentity = processIdentity
        self.runID = runID
        self.configuration = configuration
        self.dispatcher = SignalDispatcher(path: store.path, environment: store.environment, configuration: configuration)
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
        let center: SignalCenter
        do {
            center = try SignalCenter(store: store, processIdentity: processIdentity, runID: runID, configuration: configuration)
        } catch let error as LMDBError {
            throw SignalError(.storage, store: store.path, detail: error.summary, recovery: error.recovery, storageFailure: error.storageFailure)
        }
        RunLiveness.begin(runID)
        if !store.environment.configuration.readOnly {
            try center.removeConsumers {
                $0.scope == .run && $0.processIdentity == processIdentity && $0.runID != runID && $0.run.isProvablyDead
            }
        }
        center.dispatcher.start(center: center)
        return center
    }

    /// Opens (or creates) the store at `path` and its signal subsystem.
    public static func open(
        path: String, processIdentity: String, runID: String = UUID().uuidString,
        configuration: SignalConfiguration = SignalConfiguration(), storeConfiguration: StoreConfiguration = StoreConfiguration()
    ) throws -> SignalCenter {
        try open(store: WorkflowStore.open(path: path, configuration: storeConfiguration),
                 processIdentity: processIdentity, runID: runID, configuration: configuration)
    }

    /// Ends this run: its run-scoped consumers are removed and the dispatcher stops.
    public func stop() throws {
        dispatcher.stop()
        RunLiveness.end(runID)
        guard !environment.configuration.readOnly else { return }
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
    @discardableResult
    public func post(_ posts: [SignalPost]) throws -> [UInt64] {
        let layout = self.layout, keepLatest = configuration.keepLatest
        let now = WallTime.now()
        let versions = try storage { () throws -> [UInt64] in
            try environment.write(durability: configuration.lmdbDurability) { txn in
                try posts.map { post in
                    if let key = post.idempotencyKey,
                       let earlier = try txn.value(forKey: key, in: layout.idempotency, {
                           $0.count == 24 ? UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) : nil
                       }) {
                        return earlier
                    }
                    let recordKey = post.signal.bytes
                    var record = try txn.value(forKey: recordKey, in: layout.records) { SignalRecord.decode($0) }
                        ?? SignalRecord(latestVersion: 0, created: now, updated: now)
                    record.latestVersion += 1
                    record.updated = now
                    let stored = StoredVersion(terminates: post.terminatesConsumersAfterDelivery, posted: now, payload: post.payload)
                    try txn.put(stored.encoded(), forKey: SignalLayout.versionKey(post.signal, record.latestVersion), in: layout.versions)
                    try txn.put(record.encoded(), forKey: recordKey, in: layout.records)
                    if let key = post.idempotencyKey {
                        try txn.put(SignalLayout.versionKey(post.signal, record.latestVersion), forKey: key, in: layout.idempotency)
                    }
                    try SignalCenter.prune(post.signal, latest: record.latestVersion, keepLatest: keepLatest, layout: layout, txn)
                    return record.latestVersion
                }
            }
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
        let consumer = ConsumerInfo(
            id: id, signal: signal, owner: owner, runID: runID, processIdentity: processIdentity,
            processID: process.pid, processStartTime: process.startTime, behaviour: behaviour,
            coalescing: coalescing, scope: scope, lastDelivered: 0, created: .now())
        let layout = self.layout
        try storage {
            try environment.write { txn in
                if try txn.contains(id.bytes, in: layout.consumers) { return }
                try txn.put(consumer.encoded(), forKey: id.bytes, in: layout.consumers)
                try txn.put([0], forKey: signal.bytes + id.bytes, in: layout.bySignal)
                if try !txn.contains(signal.bytes, in: layout.records) {
                    let now = WallTime.now()
                    try txn.put(SignalRecord(latestVersion: 0, created: now, updated: now).encoded(), forKey: signal.bytes, in: layout.records)
                }
            }
        }
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
        let layout = self.layout
        try storage {
            try environment.write { txn in
                guard let info = try SignalCenter.consumer(consumer, layout: layout, txn) else {
                    throw SignalError(.unknownConsumer, store: path, consumer: consumer, detail: "no consumer has this id")
                }
                try SignalCenter.remove(info, layout: layout, txn)
            }
        }
        dispatcher.detach(consumer)
    }

    /// Removes every consumer matching `predicate` (and records left without consumers).
    func removeConsumers(where predicate: (ConsumerInfo) -> Bool) throws {
        let layout = self.layout
        try storage {
            try environment.write { txn in
                var doomed: [ConsumerInfo] = []
                try txn.forEach(in: layout.consumers) { key, value in
                    if let info = ConsumerInfo.decode(id: ConsumerID(bytes: key), value), predicate(info) { doomed.append(info) }
                    return true
                }
                for info in doomed { try SignalCenter.remove(info, layout: layout, txn) }
            }
        }
    }

    // MARK: Transactional primitives (also used inside workflow commits)

    static func consumer(_ id: ConsumerID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> ConsumerInfo? {
        try txn.value(forKey: id.bytes, in: layout.consumers) { ConsumerInfo.decode(id: id, $0) }
    }

    /// Marks `version` delivered to `consumer` and applies the removal rules (S4); a no-op when
    /// the consumer is gone or already past `version` (so a mark can never apply twice).
    static func mark(
        _ consumerID: ConsumerID, version: UInt64, terminates: Bool, keepLatest: Int, layout: SignalLayout, _ txn: borrowing WriteTransaction
    ) throws {
        guard var consumer = try consumer(consumerID, layout: layout, txn), consumer.lastDelivered < version else { return }
        consumer.lastDelivered = version
        if consumer.behaviour == .once || terminates {
            try remove(consumer, layout: layout, txn)
        } else {
            try txn.put(consumer.encoded(), forKey: consumerID.bytes, in: layout.consumers)
            let latest = try txn.value(forKey: consumer.signal.bytes, in: layout.records) { SignalRecord.decode($0)?.latestVersion }
            try prune(consumer.signal, latest: latest ?? version, keepLatest: keepLatest, layout: layout, txn)
        }
    }

    /// Removes `consumer`; removes its signal's record and versions if no consumer is left.
    static func remove(_ consumer: ConsumerInfo, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        try txn.delete(consumer.id.bytes, in: layout.consumers)
        try txn.delete(consumer.signal.bytes + consumer.id.bytes, in: layout.bySignal)
        if try consumerIDs(of: consumer.signal, layout: layout, txn).isEmpty {
            try txn.delete(consumer.signal.bytes, in: layout.records)
            try deleteVersions(of: consumer.signal, through: .max, layout: layout, txn)
        }
    }

    static func consumerIDs(of signal: SignalID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> [ConsumerID] {
        var ids: [ConsumerID] = []
        let prefix = signal.bytes
        try txn.forEach(in: layout.bySignal, from: prefix) { key, _ in
            guard key.count == 32, key.prefix(16).elementsEqual(prefix) else { return false }
            ids.append(ConsumerID(bytes: UnsafeRawBufferPointer(rebasing: key[16..<32])))
            return true
        }
        return ids
    }

    /// Drops versions every consumer has, keeping the newest `keepLatest`.
    static func prune(_ signal: SignalID, latest: UInt64, keepLatest: Int, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
        let ids = try consumerIDs(of: signal, layout: layout, txn)
        var needed = UInt64.max
        for id in ids {
            if let info = try consumer(id, layout: layout, txn) { needed = min(needed, info.lastDelivered) }
        }
        let keepFrom = latest >= UInt64(keepLatest) ? latest - UInt64(keepLatest) : 0
        let through = ids.isEmpty ? keepFrom : min(needed, keepFrom)
        if through > 0 { try deleteVersions(of: signal, through: through, layout: layout, txn) }
    }

    static func deleteVersions(of signal: SignalID, through last: UInt64, layout: SignalLayout, _ txn: borrowing WriteTransaction) throws {
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

    /// The next version to hand to `consumer`, or `nil` when it is up to date.
    static func nextDelivery(for consumer: ConsumerInfo, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> SignalDelivery? {
        guard let record = try txn.value(forKey: consumer.signal.bytes, in: layout.records, { SignalRecord.decode($0) }),
              record.latestVersion > consumer.lastDelivered else { return nil }
        let prefix = consumer.signal.bytes
        let start = consumer.coalescing == .latestOnly ? record.latestVersion : consumer.lastDelivered + 1
        var found: SignalDelivery?
        try txn.forEach(in: layout.versions, from: SignalLayout.versionKey(consumer.signal, start)) { key, value in
            guard key.count == 24, key.prefix(16).elementsEqual(prefix), let stored = StoredVersion.decode(value) else { return false }
            found = SignalDelivery(
                signal: consumer.signal, consumer: consumer.id,
                version: UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                payload: stored.payload, terminatesConsumersAfterDelivery: stored.terminates, posted: stored.posted)
            return false
        }
        return found
    }

    // MARK: Inspection

    /// Every signal record with its retained versions and consumer count.
    public func signals() throws -> [SignalInfo] {
        try storage {
            try environment.read { txn in
                var infos: [SignalInfo] = []
                try txn.forEach(in: layout.records) { key, value in
                    guard let record = SignalRecord.decode(value) else { return true }
                    let signal = SignalID(bytes: key)
                    infos.append(SignalInfo(
                        id: signal, latestVersion: record.latestVersion,
                        retainedVersions: try SignalCenter.retained(signal, layout: layout, txn).map(\.version),
                        consumers: try SignalCenter.consumerIDs(of: signal, layout: layout, txn).count,
                        created: record.created, updated: record.updated))
                    return true
                }
                return infos
            }
        }
    }

    /// The retained versions of `signal`, oldest first.
    public func versions(of signal: SignalID) throws -> [SignalDelivery] {
        try storage {
            try environment.read { txn in
                guard try txn.contains(signal.bytes, in: layout.records) else {
                    throw SignalError(.unknownSignal, store: path, signal: signal, detail: "no signal record has this id",
                                      recovery: "List signals with `wfctl signals \(path)`")
                }
                return try SignalCenter.retained(signal, layout: layout, txn)
            }
        }
    }

    static func retained(_ signal: SignalID, layout: SignalLayout, _ txn: borrowing Transaction<some TransactionMode>) throws -> [SignalDelivery] {
        var versions: [SignalDelivery] = []
        let prefix = signal.bytes
        try txn.forEach(in: layout.versions, from: prefix) { key, value in
            guard key.count == 24, key.prefix(16).elementsEqual(prefix) else { return false }
            if let stored = StoredVersion.decode(value) {
                versions.append(SignalDelivery(
                    signal: signal, consumer: nil, version: UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                    payload: stored.payload, terminatesConsumersAfterDelivery: stored.terminates, posted: stored.posted))
            }
            return true
        }
        return versions
    }

    /// Every consumer (of `signal`, if given) with its position.
    public func consumers(of signal: SignalID? = nil) throws -> [ConsumerInfo] {
        try storage {
            try environment.read { txn in
                var infos: [ConsumerInfo] = []
                try txn.forEach(in: layout.consumers) { key, value in
                    if let info = ConsumerInfo.decode(id: ConsumerID(bytes: key), value), signal == nil || info.signal == signal {
                        infos.append(info)
                    }
                    return true
                }
                return infos
            }
        }
    }

    /// Every consumer with versions it has not been given yet, and those versions.
    public func pendingDeliveries() throws -> [PendingDelivery] {
        try storage {
            try environment.read { txn in
                var pending: [PendingDelivery] = []
                for consumer in try consumers() {
                    let retained = try SignalCenter.retained(consumer.signal, layout: layout, txn).map(\.version)
                        .filter { $0 > consumer.lastDelivered }
                    let versions = consumer.coalescing == .latestOnly ? Array(retained.suffix(1)) : retained
                    if !versions.isEmpty { pending.append(PendingDelivery(consumer: consumer, versions: versions)) }
                }
                return pending
            }
        }
    }

    /// Runs `body`, turning LMDB errors into ``SignalError``s naming the store.
    func storage<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as LMDBError {
            throw SignalError(.storage, store: path, detail: error.summary, recovery: error.recovery, storageFailure: error.storageFailure)
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
