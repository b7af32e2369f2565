import DurableWorkflow
import Foundation
import Synchronization
import Tracing
import Workflow
import WorkflowLocks
import WorkflowStorage

/// Persistent, versioned signals shared by the processes of one host through one store (rules S1-S6).
///
/// Every post appends a new version; consumers registered for a signal get each version after
/// their last delivered one, in order, once (see ``SignalHandler`` for the guarantee of each kind of
/// handler). Handlers are attached in memory, in the process that owns the consumer; a dispatcher
/// thread delivers to them. Another process's post wakes the dispatcher through the store's change
/// feed (with LMDB, a datagram socket in the store's `wake/` directory); the store and the
/// consumers' saved positions are the truth. The signals live in the store's backend
/// (`WorkflowStorage.SignalStorage`): any backend that passes the contract suite, the in-memory
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
    /// Whether ``stop()`` was called, and the number of this center's handler in its store's
    /// ``WorkflowStore/close()`` (`nil` before it is registered, or once the center stopped).
    private let run = Lock<(stopped: Bool, closingHandler: UInt64?)>((false, nil))
    /// The signals whose stable names this center has kept in the store lately (see ``keepNames(of:)``).
    private let named = Lock(NamesKept())

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
        // Closing the store ends the run first, while its consumers can still be removed.
        let handler = store.whenClosing { [weak center] in try? center?.stop() }
        center.run.withLock { $0.closingHandler = handler }
        return center
    }

    /// Ends this run: its run-scoped consumers are removed and the dispatcher stops. Once it has
    /// (also when the store's ``WorkflowStore/close()`` ended it), calling it again does nothing.
    /// A run whose consumers could not be removed (the store failed) has them removed at the
    /// next open of the store by this process identity (the run is over).
    public func stop() throws {
        let (alreadyStopped, handler) = run.withLock { run in
            defer { run = (true, nil) }
            return run
        }
        guard !alreadyStopped else { return }
        // The store's close need not end this run any more.
        if let handler { store.forgetClosingHandler(handler) }
        dispatcher.stop()
        RunLiveness.end(runID)
        guard !store.backend.isReadOnly else { return }
        try removeConsumers { $0.scope == .run && $0.runID == runID }
    }

    // MARK: Posting

    /// Keeps in the store the stable names of `signals` that have one, once their records exist
    /// (after the post or registration that gave them). A name is for operators: one that cannot
    /// be kept is logged, and the post or registration stands.
    func keepNames(of signals: [SignalID]) {
        guard signals.contains(where: { $0.stableName != nil }) else { return }
        let now = ContinuousClock.now
        let names = named.withLock { named in named.unkept(signals, at: now) }
        guard !names.isEmpty else { return }
        do {
            try signalStorage.nameSignals(names)
            named.withLock { $0.kept(names.keys) }
        } catch {
            configuration.logger.warning("the stable names of signals could not be kept", metadata: ["error": "\(error)"])
        }
    }

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
                             idempotencyKey: $0.idempotencyKey, traceContext: traced?.context ?? $0.traceContext)
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
        keepNames(of: posts.map(\.signal))
        dispatcher.didPost()
        return versions
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
    /// The trace context the post continues when it comes from outside this process (a
    /// request's W3C `traceparent` and `tracestate`; `wfctl signal post --trace-context`). With a
    /// tracer, the post's span continues it (a batch's span, its first post's); without one, the
    /// versions carry it as it is to their deliveries. Empty: the post's span continues the
    /// caller's current context.
    public let traceContext: TraceContext

    /// A post of `payload` to `signal`.
    public init(
        signal: SignalID, payload: [UInt8], terminatesConsumersAfterDelivery: Bool = true, idempotencyKey: String? = nil,
        traceContext: TraceContext = TraceContext()
    ) {
        self.signal = signal
        self.payload = payload
        self.terminatesConsumersAfterDelivery = terminatesConsumersAfterDelivery
        self.idempotencyKey = idempotencyKey
        self.traceContext = traceContext
    }
}

/// The signals whose stable names a center kept in the store lately: a post or wait of one of
/// them writes nothing more. Forgotten every minute (a signal's record, and its name with it,
/// goes with its last consumer, and a later post makes both again) and when it grows large.
struct NamesKept {
    private var signals: Set<UUID> = []
    private var since = ContinuousClock.now

    /// The names of `ids` not kept lately, by signal.
    mutating func unkept(_ ids: [SignalID], at now: ContinuousClock.Instant) -> [UUID: String] {
        if now - since > .seconds(60) || signals.count > 10_000 {
            signals.removeAll()
            since = now
        }
        var names: [UUID: String] = [:]
        for id in ids {
            if let name = id.stableName, !signals.contains(id.uuid) { names[id.uuid] = name }
        }
        return names
    }

    mutating func kept(_ ids: some Sequence<UUID>) {
        signals.formUnion(ids)
    }
}
