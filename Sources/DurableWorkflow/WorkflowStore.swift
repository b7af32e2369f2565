import CoreMetrics
import Workflow
import WorkflowLocks
import WorkflowStorage

/// Where an instance is in its life.
public typealias InstanceStatus = WorkflowStorage.InstanceStatus
/// What ``WorkflowStore/statistics()`` reports.
public typealias StoreStatistics = WorkflowStorage.StorageStatistics
/// One finding of ``WorkflowStore/check(progress:)``.
public typealias StoreDamage = WorkflowStorage.StoreDamage
/// The code versions a build runs (``DurableConfiguration/supportedCodeVersions``).
public typealias SupportedCodeVersions = WorkflowStorage.SupportedCodeVersions

/// Many workflow instances, each with its own log (rule D6), kept by a `StorageBackend`: LMDB
/// (`WorkflowStore.open(path:)` from `WorkflowLMDB`, the embedded default) or memory
/// (``inMemory(name:)``, for tests: not durable).
///
/// Start an instance with ``start(_:id:configuration:)``; after a restart, ``resume(id:as:configuration:)``
/// rebuilds its state by replaying its log (from its latest snapshot) and then starts its workers
/// and side effects. List, complete and delete instances through the index, which is updated in the
/// same transaction as each log commit.
public final class WorkflowStore: Sendable {
    /// Where the store is (a directory for LMDB), as messages name it.
    public let path: String
    /// The backend that keeps the store.
    public let backend: any StorageBackend
    /// Commits every instance's batches, merging whatever waits into one commit.
    let pipeline: CommitPipeline
    /// The engine's metrics for this store.
    let metrics: StoreMetrics
    /// What ``close()`` ends first, while the store is still open (signal centers on it), each
    /// with the number ``whenClosing(_:)`` gave it.
    private let closing = Lock<ClosingHandlers>(ClosingHandlers())
    /// Hands control requests to this process's hosts (made with the first host that takes them).
    private let controls = Lock<ControlDispatcher?>(nil)

    private struct ClosingHandlers {
        var next: UInt64 = 1
        var handlers: [(id: UInt64, end: @Sendable () -> Void)] = []
    }

    /// A store kept by `backend`, recording its swift-metrics (commits, replays; see the README's
    /// "Observability") through `metricsFactory`, by default the one bootstrapped in
    /// `MetricsSystem` (none: no-op metrics).
    public init(backend: any StorageBackend, metricsFactory: (any MetricsFactory)? = nil) {
        self.backend = backend
        self.path = backend.location
        self.pipeline = CommitPipeline(concurrency: backend.concurrentCommits, gathers: backend.isDurable, pulls: backend.writesPartsAsPulled)
        self.metrics = StoreMetrics(store: backend.location, factory: metricsFactory)
    }

    /// Records that a signal version posted at `posted` was handed to a consumer now.
    package func recordSignalHandedOver(posted: WallTime) {
        metrics.signalLatency.record(duration: WallTime.now().duration(since: posted))
    }

    /// Sets the gauge `workflow_instances` of each status to the number of instances that have
    /// it (one listing of the store).
    public func recordInstanceCounts() throws(DurableError) {
        let listed = try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances() }
        var counts: [InstanceStatus: Int] = [:]
        for instance in listed { counts[instance.status, default: 0] += 1 }
        for (status, gauge) in metrics.instancesByStatus { gauge.record(counts[status] ?? 0) }
    }

    /// Counts a graceful stop's drain in the metrics `workflow_task_attempts_drained` and
    /// `workflow_task_attempts_abandoned` (a service calls it as it shuts down).
    public func recordDrain(_ report: DrainReport) {
        metrics.attemptsDrained.increment(by: report.drained)
        metrics.attemptsAbandoned.increment(by: report.abandoned)
    }

    /// A store in this process's memory, for tests and previews: **not durable** (everything is
    /// gone with the store). Everything else works as on a durable store, durable signals included
    /// (`SignalCenter.open(store:)` keeps them in the same memory).
    public static func inMemory(name: String = "memory") -> WorkflowStore {
        WorkflowStore(backend: InMemoryStorage(name: name))
    }

    /// The root path of a tree whose root workflow is of `type`.
    static func rootPath<W: Workflow>(of type: W.Type) -> NodePath {
        NodePath(segments: [.init(workflowType: W.workflowName, key: "")])
    }

    /// The root path of a tree whose root workflow is `props` (a `Workflow` value).
    static func rootPath(ofProps props: any Sendable) -> NodePath {
        func open<W: Workflow>(_ workflow: W) -> NodePath { rootPath(of: W.self) }
        guard let workflow = props as? any Workflow else { preconditionFailure("root props are not a Workflow: \(type(of: props))") }
        return open(workflow)
    }

    /// The store's control dispatcher in this process, started with the first host that asks
    /// (and stopped as the store closes).
    var controlDispatcher: ControlDispatcher {
        let (dispatcher, made) = controls.withLock { controls -> (ControlDispatcher, Bool) in
            if let existing = controls { return (existing, false) }
            let made = ControlDispatcher(backend: backend)
            controls = made
            return (made, true)
        }
        if made { whenClosing { dispatcher.stop() } }
        return dispatcher
    }

    /// Flushes every commit made so far to disk (useful with `processCrashSafe` before shutdown).
    public func sync() throws(DurableError) {
        do { try backend.sync() } catch { throw DurableError.storage(error, store: path) }
    }

    /// Has ``close()`` call `handler` first, while the store is still open: what else uses the
    /// store (a signal center) ends its use then. Hold nothing strongly that holds the store.
    /// Returns the handler's number, for ``forgetClosingHandler(_:)`` once it has ended its use
    /// by itself.
    @discardableResult
    package func whenClosing(_ handler: @escaping @Sendable () -> Void) -> UInt64 {
        closing.withLock { closing in
            defer { closing.next += 1 }
            closing.handlers.append((closing.next, handler))
            return closing.next
        }
    }

    /// Drops the handler numbered `id` (``whenClosing(_:)``): what it would end has ended.
    package func forgetClosingHandler(_ id: UInt64) {
        closing.withLock { $0.handlers.removeAll { $0.id == id } }
    }

    /// How many handlers ``close()`` would call.
    package var closingHandlerCount: Int { closing.withLock { $0.handlers.count } }

    /// Ends the signal centers opened on it first (`SignalCenter.stop()`); then syncs every
    /// commit made so far and lets the backend go, whoever else still holds this
    /// store: PostgreSQL its connections and its host's lease (other hosts may take over at
    /// once); LMDB its environment, so that the path may be opened again at once, also after the
    /// store's files were deleted or replaced; an in-memory store its contents. Stop every host
    /// first: the store is not usable after this (its calls, and the commits of hosts still
    /// running on it, fail with `StorageFailure.Kind.closed`, on every backend). Closing again
    /// does nothing. It closes even when the sync fails, and then throws that failure.
    public func close() throws(DurableError) {
        let ending = closing.withLock { closing in
            defer { closing.handlers = [] }
            return closing.handlers
        }
        for handler in ending { handler.end() }
        let synced = Result { () throws(StorageFailure) in try backend.sync() }
        backend.close()
        if case .failure(let failure) = synced, failure.kind != .closed { throw DurableError.storage(failure, store: path) }
    }

    /// Facts about the store: counts, and the backend's sizes.
    public func statistics() throws(DurableError) -> StoreStatistics {
        do { return try backend.statistics() } catch { throw DurableError.storage(error, store: path) }
    }
}
