import Dispatch
import DurableWorkflow
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ServiceLifecycle
import Workflow
import WorkflowLocks
import WorkflowStorage

/// A store's durable instances run as a service of a swift-service-lifecycle `ServiceGroup`.
///
/// Register the root workflow types the service runs (each with its configuration), add the
/// service to a `ServiceGroup`, and start instances through it. `run()` resumes every running
/// instance of the registered types (`WorkflowStore.resumeAll(_:configuration:)`: one that
/// cannot be replayed is marked failed and logged, the others run), then serves until graceful
/// shutdown (SIGTERM, with the group's `gracefulShutdownSignals`). Shutting down, it stops
/// taking work (starts throw ``WorkflowServiceError``), drains its hosts (task attempts in
/// flight get until `drainDeadline` to return, and their outcomes are committed; those still
/// running then are logged as abandoned and run again after a restart), stops every host it
/// runs (each commits what it holds first: in `grouped` mode, every action applied before the
/// stop is committed), which releases each instance's ownership, and closes the store. One log
/// line and the metrics `workflow_task_attempts_drained` and `workflow_task_attempts_abandoned`
/// say how many attempts the drain let finish and how many it abandoned.
///
/// A host the service runs is forgotten once it stops by itself: its workflow finished
/// (`FinishingWorkflow`) or its log could not be written (logged with the failure).
///
/// While it runs, the service also adopts, every `adoptionInterval`, the running instances of
/// its types that no live host holds: those an operator resumed (`wfctl resume`), those a
/// crashed process left, and on PostgreSQL those of hosts whose lease ran out, as the store
/// spreads them over the live hosts that run their code version. On PostgreSQL it also hands
/// over, in the same pass, the instances the spread now gives another host (one that joined):
/// each once none of its task attempts is in flight, by stopping it (what it holds is
/// committed, its claim released), and the other host adopts it.
public final class WorkflowService: Service, Sendable {
    /// Where the service is in its life.
    public enum State: Sendable, Equatable {
        /// Made, not run yet: types may be registered, instances may not start.
        case idle
        /// Resuming the registered types' instances (`run()` has started).
        case resuming
        /// Running: instances start, resume and run.
        case running
        /// Graceful shutdown: no new work; the hosts are stopping.
        case shuttingDown
        /// Every host stopped and the store closed.
        case stopped
    }

    /// The store the service runs.
    public let store: WorkflowStore
    private let logger: Logger
    private let shared = Lock(Shared())

    private struct Shared {
        var state = State.idle
        var registrations: [ObjectIdentifier: Registration] = [:]
        var hosts: [String: RunningHost] = [:]
        /// Tells a host's record from a later one of the same id.
        var lastToken: UInt64 = 0
        /// Callers of `untilRunning()` waiting for the service to run (or to stop first).
        var runningWaiters: [CheckedContinuation<State, Never>] = []
        /// What the last shutdown's drain did.
        var lastDrain: DrainReport?
    }

    /// How one registered root type is resumed.
    private struct Registration: Sendable {
        let typeName: String
        let configuration: DurableConfiguration
        let resumeAll: @Sendable (WorkflowService) throws -> ResumeCounts
        /// Adopts the type's instances that no live host holds; how many it adopted.
        let adoptWaiting: @Sendable (WorkflowService) throws -> Int
        /// Stops the type's instances the store gives another live host now, each once no task
        /// attempt of it is in flight (its release hands it over); how many it stopped.
        let handOver: @Sendable (WorkflowService, [String]) async -> Int
    }

    /// A host the service runs (a `WorkflowHost` of a registered type), with how to stop it.
    private struct RunningHost: Sendable {
        let token: UInt64
        let host: any Sendable
        let stop: @Sendable () async -> Void
        let drain: @Sendable (Duration) async -> DrainReport
    }

    /// How often the gauge `workflow_instances` (by status) is set from a listing of the store.
    private let instanceCountsInterval: Duration?
    /// How often the service looks for instances of its types that no live host holds.
    private let adoptionInterval: Duration?
    /// How long a graceful shutdown lets task attempts in flight run (`nil`: no drain).
    private let drainDeadline: Duration?
    /// Where the async starts' and resumes' blocking calls run: as many at once as the store
    /// serves calls (at least 4; LMDB takes its writes one at a time anyway).
    private let blockingCalls: BlockingCalls
    /// Whether `run()` first reads every page of the store in a child process.
    private let pageWalk: PageWalkPolicy

    /// A service over `store`, logging to `logger`; while it runs, it sets the store's
    /// `workflow_instances` gauges every `instanceCountsInterval` and adopts the running
    /// instances of its types that no live host holds every `adoptionInterval` (`nil`: never).
    /// A graceful shutdown lets the task attempts in flight run for up to `drainDeadline` and
    /// commits their outcomes before it stops the hosts (`nil`: it stops them at once, and
    /// outcomes that come back after that are dropped, so those attempts run again after a
    /// restart). Keep the deadline within what your orchestrator allows between SIGTERM and
    /// SIGKILL (Kubernetes: `terminationGracePeriodSeconds`, 30 s by default).
    ///
    /// Before it resumes anything, `run()` reads every page of the store in a child process as
    /// `pageWalk` says (``WorkflowStore/walkPages(_:)``; by default when this build has not walked
    /// the store since another build opened it, or since its data file was copied or restored,
    /// or ever): damage that would stop this process inside liblmdb is found there, and the
    /// service refuses to start with a typed error naming it (a `DurableError` of kind
    /// `.storage`, its `storageFailure` `.corrupted`), instead of dying on the first read of it.
    public init(
        store: WorkflowStore, logger: Logger = Logger(label: "workflow.service"), instanceCountsInterval: Duration? = .seconds(10),
        adoptionInterval: Duration? = .seconds(2), drainDeadline: Duration? = .seconds(10), pageWalk: PageWalkPolicy = .whenUnchecked
    ) {
        self.pageWalk = pageWalk
        self.store = store
        self.logger = logger
        self.instanceCountsInterval = instanceCountsInterval
        self.adoptionInterval = adoptionInterval
        self.drainDeadline = drainDeadline
        self.blockingCalls = BlockingCalls(limit: max(4, store.backend.concurrentCalls))
    }

    /// The service's state.
    public var state: State { shared.withLock { $0.state } }

    /// What the last graceful shutdown's drain did with the task attempts in flight (`nil`
    /// before one, or when the service drains nothing).
    public var lastDrain: DrainReport? { shared.withLock { $0.lastDrain } }

    /// Returns once the service runs (its instances resumed; starts are accepted), at once if it
    /// does. Throws ``WorkflowServiceError`` if it shuts down first.
    public func untilRunning() async throws(WorkflowServiceError) {
        let reached = await withCheckedContinuation { (continuation: CheckedContinuation<State, Never>) in
            let now = shared.withLock { shared -> State? in
                switch shared.state {
                case .idle, .resuming:
                    shared.runningWaiters.append(continuation)
                    return nil
                case .running, .shuttingDown, .stopped:
                    return shared.state
                }
            }
            if let now { continuation.resume(returning: now) }
        }
        guard reached == .running else { throw WorkflowServiceError(state: reached, operation: "run") }
    }

    /// Moves to `state`, answering the callers of `untilRunning()` once it runs or stops.
    private func enter(_ state: State) {
        let waiters = shared.withLock { shared -> [CheckedContinuation<State, Never>] in
            shared.state = state
            guard state != .idle, state != .resuming else { return [] }
            defer { shared.runningWaiters = [] }
            return shared.runningWaiters
        }
        for waiter in waiters { waiter.resume(returning: state) }
    }

    /// The ids of the instances whose hosts the service runs now.
    public var runningInstances: [String] { shared.withLock { $0.hosts.keys.sorted() } }

    /// Registers root type `W`: `run()` resumes its running instances with `configuration`,
    /// which also runs the instances started through the service. Register before `run()`.
    public func register<W: DurableWorkflow>(_ type: W.Type, configuration: DurableConfiguration)
    where W.Rendering: Sendable, W.Output: Sendable {
        var logged = configuration
        // The engine logs an instance's life to the configuration's logger: the service's, unless one was set.
        if logged.logger.handler is SwiftLogNoOpLogHandler { logged.logger = logger }
        let configuration = logged
        let registration = Registration(typeName: W.workflowName, configuration: configuration) { service in
            var counts = ResumeCounts()
            for result in try service.store.resumeAll(W.self, configuration: configuration) {
                switch result.outcome {
                case .success(let host):
                    service.adopt(host, id: result.id)
                    counts.resumed += 1
                case .failure(let error) where error.kind == .instanceInUse:
                    // Another live host runs it (on PostgreSQL, another machine's): nothing failed.
                    counts.heldElsewhere += 1
                case .failure(let error) where error.kind == .unsupportedCodeVersion:
                    counts.otherVersions += 1
                case .failure:
                    // resumeAll logged it, with its error.
                    counts.failed += 1
                }
            }
            return counts
        } adoptWaiting: { service in
            let waiting = try service.store.instancesAwaitingHost(workflowType: W.workflowName, supporting: configuration.supportedCodeVersions)
                .filter { service.host(id: $0, as: W.self) == nil }
            guard !waiting.isEmpty else { return 0 }
            // As at the start: one whose log cannot be replayed is marked failed (and logged).
            var adopted = 0
            for result in service.store.resume(waiting, as: W.self, configuration: configuration) {
                if let host = result.host {
                    service.adopt(host, id: result.id)
                    adopted += 1
                }
            }
            return adopted
        } handOver: { service, ids in
            await service.handOver(ids.compactMap { id in service.host(id: id, as: W.self).map { (id, $0) } })
        }
        shared.withLock { $0.registrations[ObjectIdentifier(W.self)] = registration }
    }

    /// Starts instance `id` with `firstAction` (one commit), run by the service.
    public func start<W: DurableWorkflow, A: DurableAction>(_ workflow: W, id: String, with firstAction: A) throws -> WorkflowHost<W>
    where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        let configuration = try configuration(for: W.self)
        return adopt(try store.start(workflow, id: id, with: firstAction, configuration: configuration), id: id)
    }

    /// Starts instance `id`, run by the service.
    public func start<W: DurableWorkflow>(_ workflow: W, id: String) throws -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        let configuration = try configuration(for: W.self)
        return adopt(try store.start(workflow, id: id, configuration: configuration), id: id)
    }

    /// The host the service runs for `id`, or the instance resumed (or started with
    /// `firstAction`) and run by the service.
    public func startOrResume<W: DurableWorkflow, A: DurableAction>(_ workflow: W, id: String, with firstAction: A) throws -> WorkflowHost<W>
    where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        try runningOrAdopted(id: id) { configuration in
            try store.startOrResume(workflow, id: id, with: firstAction, configuration: configuration)
        }
    }

    /// The host the service runs for `id`, or the instance resumed (or started) and run by the service.
    public func startOrResume<W: DurableWorkflow>(_ workflow: W, id: String) throws -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        try runningOrAdopted(id: id) { configuration in try store.startOrResume(workflow, id: id, configuration: configuration) }
    }

    // MARK: Starting without blocking a thread of the cooperative pool

    /// As ``start(_:id:with:)``, suspending the calling task (not blocking its thread) until the
    /// first commit: thousands of concurrent starts leave the cooperative pool free, so the
    /// service notices a shutdown signal at once.
    public func start<W: DurableWorkflow, A: DurableAction>(_ workflow: W, id: String, with firstAction: A) async throws -> WorkflowHost<W>
    where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        try await offThePool { try self.start(workflow, id: id, with: firstAction) as WorkflowHost<W> }
    }

    /// As ``start(_:id:)``, suspending the calling task until the first commit.
    public func start<W: DurableWorkflow>(_ workflow: W, id: String) async throws -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        try await offThePool { try self.start(workflow, id: id) as WorkflowHost<W> }
    }

    /// As ``startOrResume(_:id:with:)``, suspending the calling task while the instance is
    /// started (its first commit) or resumed (its replay).
    public func startOrResume<W: DurableWorkflow, A: DurableAction>(_ workflow: W, id: String, with firstAction: A) async throws -> WorkflowHost<W>
    where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        if let running = host(id: id, as: W.self) { return running }
        return try await offThePool { try self.startOrResume(workflow, id: id, with: firstAction) as WorkflowHost<W> }
    }

    /// As ``startOrResume(_:id:)``, suspending the calling task while the instance is started
    /// or resumed.
    public func startOrResume<W: DurableWorkflow>(_ workflow: W, id: String) async throws -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        if let running = host(id: id, as: W.self) { return running }
        return try await offThePool { try self.startOrResume(workflow, id: id) as WorkflowHost<W> }
    }

    /// Runs a blocking call of the store (a commit, a replay) for an async start or resume on the
    /// service's own threads (``BlockingCalls``), outside the cooperative pool and Dispatch's.
    private func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await blockingCalls.run(body)
    }

    /// The host the service runs for `id`, else the one `open` makes (adopted). A concurrent call
    /// for the same id that got there first makes `open` fail with `instanceInUse`: its host is
    /// then the answer.
    private func runningOrAdopted<W: DurableWorkflow>(
        id: String, _ open: (DurableConfiguration) throws -> WorkflowHost<W>
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        if let running = host(id: id, as: W.self) { return running }
        let configuration = try configuration(for: W.self)
        do {
            return adopt(try open(configuration), id: id)
        } catch let error as DurableError where error.kind == .instanceInUse {
            // The other call claims, then adopts: wait a moment for the adoption.
            for _ in 0..<100 {
                if let running = host(id: id, as: W.self) { return running }
                usleep(1_000)
            }
            throw error
        }
    }

    /// The host the service runs for instance `id`, or the instance resumed from its log (its
    /// props are in it: the caller needs only its id and root type) and run by the service.
    /// Throws what `WorkflowStore.resume(id:as:configuration:)` throws (the instance is missing,
    /// held by another live host, cannot be replayed).
    public func resume<W: DurableWorkflow>(id: String, as type: W.Type) async throws -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        if let running = host(id: id, as: W.self) { return running }
        return try await offThePool {
            try self.runningOrAdopted(id: id) { configuration in try self.store.resume(id: id, as: type, configuration: configuration) }
                as WorkflowHost<W>
        }
    }

    // MARK: The control plane

    /// Asks the host that runs instance `id` (in this process or any other, on any host of the
    /// store) to cancel it: see `WorkflowStore.cancel(id:reason:deadline:timeout:)`.
    @discardableResult
    public func cancel(id: String, reason: String? = nil, deadline: Duration? = .seconds(60), timeout: Duration = .seconds(10)) async throws
        -> ControlAnswer {
        try await store.cancel(id: id, reason: reason, deadline: deadline, timeout: timeout)
    }

    /// Ends instance `id` at once, as terminated, wherever its host runs.
    @discardableResult
    public func terminate(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) async throws -> ControlAnswer {
        try await store.terminate(id: id, reason: reason, timeout: timeout)
    }

    /// Pauses instance `id` wherever its host runs: no action is applied and no timer fires until
    /// it is unpaused (the service does not resume a paused instance).
    @discardableResult
    public func pause(id: String, reason: String? = nil, timeout: Duration = .seconds(40)) async throws -> ControlAnswer {
        try await store.pause(id: id, reason: reason, timeout: timeout)
    }

    /// Unpauses instance `id`: its host applies what waited; one no live host holds is adopted by
    /// a service of its type within its adoption interval.
    @discardableResult
    public func unpause(id: String, reason: String? = nil, timeout: Duration = .seconds(10)) async throws -> ControlAnswer {
        try await store.unpause(id: id, reason: reason, timeout: timeout)
    }

    /// Deletes instance `id`, stopping the host that runs it first.
    @discardableResult
    public func delete(id: String, timeout: Duration = .seconds(10)) async throws -> ControlAnswer {
        try await store.delete(id: id, timeout: timeout)
    }

    /// The host the service runs for instance `id`, if any.
    public func host<W: DurableWorkflow>(id: String, as type: W.Type) -> WorkflowHost<W>?
    where W.Rendering: Sendable, W.Output: Sendable {
        shared.withLock { $0.hosts[id]?.host as? WorkflowHost<W> }
    }

    public func run() async throws {
        let registrations = try shared.withLock { shared -> [Registration] in
            guard shared.state == .idle else { throw WorkflowServiceError(state: shared.state, operation: "run") }
            shared.state = .resuming
            return shared.registrations.values.sorted { $0.typeName < $1.typeName }
        }
        let started = ContinuousClock.now
        do {
            try walkPages()
        } catch {
            await shutDown()
            throw error
        }
        for registration in registrations {
            let counts: ResumeCounts
            do {
                counts = try registration.resumeAll(self)
            } catch {
                // The store could not list its instances: the service ends before it ran.
                await shutDown()
                throw error
            }
            var metadata: Logger.Metadata = [
                "workflow": "\(registration.typeName)", "resumed": "\(counts.resumed)", "failed": "\(counts.failed)",
                "duration": "\(ContinuousClock.now - started)",
            ]
            if counts.heldElsewhere > 0 { metadata["held_elsewhere"] = "\(counts.heldElsewhere)" }
            if counts.otherVersions > 0 { metadata["other_code_versions"] = "\(counts.otherVersions)" }
            logger.info("resumed instances", metadata: metadata)
        }
        enter(.running)
        logger.info("workflow service running", metadata: ["store": "\(store.path)"])
        await servePeriodically()
        await shutDown()
    }

    /// Walks the store's pages as ``pageWalk`` says; throws the damage found, typed.
    private func walkPages() throws(DurableError) {
        let walkStarted = ContinuousClock.now
        switch store.walkPages(pageWalk) {
        case .notNeeded:
            return
        case .intact(let entries):
            logger.info("walked every page of the store", metadata: [
                "entries": "\(entries)", "duration": "\(ContinuousClock.now - walkStarted)",
            ])
        case .damaged(let failure):
            logger.error("the store is damaged: the service does not start", metadata: ["damage": "\(failure)"])
            throw DurableError.storage(failure, store: store.path)
        case .unfinished(let reason):
            logger.warning("the walk of the store's pages did not finish; the service starts", metadata: ["reason": "\(reason)"])
        }
    }

    /// Waits for graceful shutdown (or cancellation), meanwhile setting the instance gauges.
    private func servePeriodically() async {
        let store = self.store, interval = instanceCountsInterval
        let registrations = shared.withLock { $0.registrations.values.sorted { $0.typeName < $1.typeName } }
        await withTaskGroup(of: Void.self) { tasks in
            if let adoption = adoptionInterval {
                tasks.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: adoption)
                        for registration in registrations where !Task.isCancelled {
                            do {
                                let adopted = try registration.adoptWaiting(self)
                                if adopted > 0 {
                                    self.logger.info("adopted instances no live host held", metadata: [
                                        "workflow": "\(registration.typeName)", "adopted": "\(adopted)",
                                    ])
                                }
                            } catch {
                                self.logger.warning("could not list the instances awaiting a host", metadata: ["error": "\(error)"])
                            }
                        }
                        await self.handOverToOtherHosts(registrations)
                    }
                }
            }
            // Returns on graceful shutdown, throws when the task is cancelled: both end the service.
            tasks.addTask { try? await gracefulShutdown() }
            if let interval {
                tasks.addTask {
                    while !Task.isCancelled {
                        try? store.recordInstanceCounts()
                        try? await Task.sleep(for: interval)
                    }
                }
            }
            await tasks.next()
            tasks.cancelAll()
        }
    }

    /// Hands over the instances the store gives another live host now (on PostgreSQL, to a host
    /// that joined: ``WorkflowStore/instancesToHandOver()``), at most
    /// ``handOverBatch`` a pass, with one log line for those it handed over.
    private func handOverToOtherHosts(_ registrations: [Registration]) async {
        let leaving: [String]
        do {
            leaving = try store.instancesToHandOver()
        } catch {
            logger.warning("could not list the instances to hand over", metadata: ["error": "\(error)"])
            return
        }
        guard !leaving.isEmpty else { return }
        var handed = 0
        for registration in registrations where !Task.isCancelled && handed < Self.handOverBatch {
            handed += await registration.handOver(self, Array(leaving.prefix(Self.handOverBatch - handed)))
        }
        if handed > 0 {
            logger.info("handed instances over to the hosts the store gives them", metadata: [
                "handed_over": "\(handed)", "to_hand_over": "\(leaving.count)",
            ])
        }
    }

    /// How many instances one pass hands over at most: a host that joins takes its share over a
    /// few adoption intervals, not in one burst of replays.
    static let handOverBatch = 50

    /// Stops each of `hosts` that has no task attempt in flight, all at once
    /// (`WorkflowHost.stopIfNoAttemptsInFlight()`): its stop commits what it holds and releases
    /// the instance for the host the store gives it to. One with an attempt in flight is left
    /// for a later pass, so that handing over never abandons an attempt (whose call would then
    /// run again on the other host). Not while the service shuts down. How many it stopped.
    private func handOver<W: DurableWorkflow>(_ hosts: [(id: String, host: WorkflowHost<W>)]) async -> Int
    where W.Rendering: Sendable, W.Output: Sendable {
        guard state == .running else { return 0 }
        return await withTaskGroup(of: Bool.self) { group in
            for (_, host) in hosts {
                group.addTask { await host.stopIfNoAttemptsInFlight() }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    /// Stops taking work, drains the hosts' attempts in flight, stops every host (each commits
    /// what it holds) and closes the store.
    private func shutDown() async {
        enter(.shuttingDown)
        let hosts = shared.withLock { Array($0.hosts.values) }
        logger.info("workflow service shutting down", metadata: ["hosts": "\(hosts.count)"])
        if let drainDeadline { await drain(hosts, within: drainDeadline) }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts { group.addTask { await host.stop() } }
        }
        do {
            try store.close()
        } catch {
            logger.error("the store could not be synced at shutdown", metadata: ["error": "\(error)"])
        }
        enter(.stopped)
        logger.info("workflow service stopped")
    }

    /// Lets the attempts in flight on every host finish within `deadline` (all hosts at once),
    /// their outcomes committed; reports the counts in one log line and the metrics.
    private func drain(_ hosts: [RunningHost], within deadline: Duration) async {
        let started = ContinuousClock.now
        let report = await withTaskGroup(of: DrainReport.self) { group in
            for host in hosts { group.addTask { await host.drain(deadline) } }
            return await group.reduce(DrainReport(), +)
        }
        shared.withLock { $0.lastDrain = report }
        store.recordDrain(report)
        let metadata: Logger.Metadata = [
            "drained": "\(report.drained)", "abandoned": "\(report.abandoned)", "deadline": "\(deadline)",
            "duration": "\(ContinuousClock.now - started)",
        ]
        if report.abandoned > 0 {
            logger.warning("drained the task attempts in flight; those still running at the deadline run again after a restart", metadata: metadata)
        } else {
            logger.info("drained the task attempts in flight", metadata: metadata)
        }
    }

    private func configuration<W: DurableWorkflow>(for type: W.Type) throws(WorkflowServiceError) -> DurableConfiguration {
        let (state, found) = shared.withLock { ($0.state, $0.registrations[ObjectIdentifier(W.self)]) }
        guard state == .running || state == .resuming else { throw WorkflowServiceError(state: state, operation: "start") }
        guard let found else { throw WorkflowServiceError(unregistered: W.workflowName) }
        return found.configuration
    }

    /// Keeps `host` until it stops; a host adopted after shutdown began is stopped at once.
    @discardableResult
    private func adopt<W: DurableWorkflow>(_ host: WorkflowHost<W>, id: String) -> WorkflowHost<W>
    where W.Rendering: Sendable, W.Output: Sendable {
        let token = shared.withLock { shared -> UInt64? in
            guard shared.state == .running || shared.state == .resuming else { return nil }
            shared.lastToken += 1
            shared.hosts[id] = RunningHost(
                token: shared.lastToken, host: host, stop: { await host.stopAndWait() }, drain: { await host.drain(within: $0) })
            return shared.lastToken
        }
        guard let token else {
            host.stop()
            return host
        }
        // Weak: the host keeps this handler until it stops.
        host.whenStopped { [weak self, weak host] in
            guard let self else { return }
            self.shared.withLock { shared in
                if shared.hosts[id]?.token == token { shared.hosts[id] = nil }
            }
            if let failure = host?.failure {
                self.logger.error("an instance stopped on a failure", metadata: ["instance": "\(id)", "error": "\(failure)"])
            }
        }
        return host
    }
}

/// What a service's resume of one type's running instances made of them.
struct ResumeCounts: Sendable {
    /// Resumed, and run by the service.
    var resumed = 0
    /// Marked failed: their logs cannot be replayed (each logged with its error).
    var failed = 0
    /// Run by another live host (on PostgreSQL, of another machine): left to it.
    var heldElsewhere = 0
    /// Started under code versions this build does not run: left to a build that runs them.
    var otherVersions = 0
}

/// What the service cannot do in its present state.
public struct WorkflowServiceError: Error, CustomStringConvertible {
    /// The service's state when it refused.
    public let state: WorkflowService.State?
    /// What was asked.
    public let operation: String
    /// The root type that was not registered, if that is why.
    public let unregisteredType: String?

    init(state: WorkflowService.State, operation: String) {
        self.state = state
        self.operation = operation
        self.unregisteredType = nil
    }

    init(unregistered type: String) {
        self.state = nil
        self.operation = "start"
        self.unregisteredType = type
    }

    public var description: String {
        if let unregisteredType {
            return "the workflow service runs no \(unregisteredType): register it with its configuration before run()"
        }
        return "the workflow service cannot \(operation) while \(state.map { "\($0)" } ?? "in this state")"
    }
}
