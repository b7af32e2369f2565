import Synchronization
import WorkflowLocks

/// How a ``WorkflowHost`` runs: a value, passed once.
public struct HostConfiguration: Sendable {
    /// Hooks called as the runtime works (logging, metrics, tracing).
    public var observers: [any WorkflowObserver]
    /// What to do with programmer errors (default: stop the process with a clear message).
    public var programmerErrors: ProgrammerErrorPolicy
    /// Where actions get their time and timers wait (default: the system clock).
    public var clock: any WorkflowClock
    /// Whether root outputs are kept for ``WorkflowHost/outputs`` (default). Turn it off for a host
    /// whose outputs nobody reads: they are then dropped instead of accumulating.
    public var bufferOutputs: Bool = true
    /// Whether root outputs go to ``WorkflowHost/acknowledgeableOutputs`` with their entry's
    /// sequence, and those not acknowledged are delivered again after a resume (set by the
    /// durable engine from its configuration's output delivery).
    package var acknowledgedOutputs = false
    /// Services that `render` reaches through ``RenderContext/dependency(_:)`` (a signal center,
    /// a client): things that are not props because they are not values.
    public var dependencies: [ObjectIdentifier: any Sendable] = [:]
    /// The version markers this build's code supports, each with the versions of it the code can
    /// run (`["fee": 1...2]`); ``ApplyContext/version(_:)`` and ``RenderContext/version(_:)``
    /// answer from them. A new instance takes the newest version of each; narrow a range once no
    /// instance needs the versions left out (a durable resume refuses an instance that does).
    public var versionMarkers: [String: ClosedRange<Int>] = [:]

    /// Adds `service` as the dependency of type `T`.
    public mutating func provide<T: Sendable>(_ service: T, as type: T.Type = T.self) {
        dependencies[ObjectIdentifier(type)] = service
    }

    /// A configuration with the given observers, programmer-error policy and clock.
    public init(
        observers: [any WorkflowObserver] = [], programmerErrors: ProgrammerErrorPolicy = .trap,
        clock: any WorkflowClock = SystemClock()
    ) {
        self.observers = observers
        self.programmerErrors = programmerErrors
        self.clock = clock
    }
}

/// Owns the root of a workflow tree, runs it, and publishes its renderings and outputs.
///
/// ## Concurrency model
/// The host runs on one logical serial executor: a single drainer of a first-in-first-out queue.
/// - A send (sink, worker output, `update(workflow:)`) made while the host is idle is applied on
///   the calling thread, with its output cascade and exactly one render pass, before the call
///   returns: the rendering read right after reflects it (rule R1).
/// - A send made while an action is being applied (from an observer, a side effect, a callback on
///   the same thread), or while another thread is running the host, is queued and applied right
///   after, with its own render pass: never recursed, never dropped, never concurrent.
/// - A send during a render pass is a programmer error (see ``ProgrammerErrorPolicy``).
/// - Workers run as tasks on the global concurrent executor; their outputs enter the same queue.
///
/// Renderings are published after each render pass: ``rendering`` is the latest; ``renderings()``
/// and ``observeRenderings(_:)`` start with the current rendering exactly once, then give exactly
/// one per render pass. Outputs of the root reach ``outputs`` in order.
public final class WorkflowHost<W: Workflow & Sendable>: Sendable where W.Rendering: Sendable, W.Output: Sendable {
    private let runtime: WorkflowRuntime<W>
    private let observationIDs = Atomic<UInt64>(0)

    /// Creates the root node from `workflow` and runs the first render pass before returning.
    public init(workflow: W, configuration: HostConfiguration = HostConfiguration()) {
        do {
            let versions = configuration.versionMarkers.isEmpty ? nil : InstanceVersions(
                codeVersion: nil, declared: configuration.versionMarkers, markers: InstanceVersions.newest(of: configuration.versionMarkers),
                programmerErrors: configuration.programmerErrors)
            runtime = try WorkflowRuntime(
                workflow: workflow, observers: configuration.observers, programmerErrors: configuration.programmerErrors,
                clock: configuration.clock, dependencies: configuration.dependencies, bufferOutputs: configuration.bufferOutputs,
                versions: versions)
        } catch {
            preconditionFailure("an in-memory host cannot fail to start: \(error)")
        }
    }

    /// A host whose applied actions go through `journal` (the durable engine), optionally
    /// rebuilt by `replay` before anything is released.
    package init(
        workflow: W, configuration: HostConfiguration, journal: any RuntimeJournal,
        restorer: (any StateRestorer)? = nil, versions: InstanceVersions? = nil, initialSequence: UInt64? = nil,
        replay: ((any ReplayDriver) throws -> Void)? = nil
    ) throws {
        runtime = try WorkflowRuntime(
            workflow: workflow, observers: configuration.observers, programmerErrors: configuration.programmerErrors,
            clock: configuration.clock, dependencies: configuration.dependencies, bufferOutputs: configuration.bufferOutputs,
            acknowledgedOutputs: configuration.acknowledgedOutputs, journal: journal, restorer: restorer, versions: versions,
            initialSequence: initialSequence, replay: replay)
    }

    /// Builds the tree from `workflow` (and `restorer`), its node paths named with `pathNaming`
    /// (the instance's), runs `replay`, hands the tree to `inspect`, and ends it: no worker, side
    /// effect, rendering or output ever leaves.
    package static func inspect(
        workflow: W, configuration: HostConfiguration, restorer: (any StateRestorer)?, versions: InstanceVersions? = nil,
        initialSequence: UInt64, pathNaming: NodePath.Naming, replay: @escaping (any ReplayDriver) throws -> Void,
        inspect: @escaping (any RuntimeTree) -> Void
    ) throws {
        _ = try WorkflowRuntime(
            workflow: workflow, observers: [], programmerErrors: configuration.programmerErrors, clock: configuration.clock,
            dependencies: configuration.dependencies, restorer: restorer, versions: versions, initialSequence: initialSequence,
            pathNaming: pathNaming, replay: replay, inspect: inspect)
    }

    /// The error that stopped a durable host (its log could not be written); `nil` while it runs.
    /// Nothing that was not committed left the host; resume the instance from the store.
    public var failure: (any Error)? { runtime.failure }

    /// Returns once every action applied so far is committed (durable hosts with grouped
    /// commits); at once for an in-memory host.
    public func flush() async {
        _ = await Waiter.wait { runtime.enqueue(.flush($0)) }
    }

    deinit {
        runtime.enqueue(.stop(nil))
        runtime.publisher.clear()
    }

    /// The latest published rendering.
    public var rendering: W.Rendering { runtime.publisher.current }

    /// Gives the root new props: `workflowDidChange(from:state:)`, then one render pass (R7).
    public func update(workflow: W) {
        runtime.enqueue(.updateRoot(workflow))
    }

    /// Renderings as an async sequence: the current one first, then one per render pass.
    /// Each call starts a new, independent, unbounded stream; it finishes when the host stops.
    public func renderings() -> AsyncStream<W.Rendering> {
        runtime.publisher.stream()
    }

    /// Calls `callback` with the current rendering, then with each new one, on the thread running
    /// the host, until the returned observation is cancelled or the host stops.
    public func observeRenderings(_ callback: @escaping @Sendable (W.Rendering) -> Void) -> RenderingObservation {
        let id = observationIDs.add(1, ordering: .relaxed).newValue
        runtime.enqueue(.observe(id, { callback($0 as! W.Rendering) }))
        let runtime = self.runtime
        return RenderingObservation { runtime.enqueue(.unobserve(id)) }
    }

    /// The root's outputs, in order, from the first render pass on. One consumer: iterate it once.
    /// (A durable host whose configuration delivers outputs until acknowledged delivers them on
    /// ``acknowledgeableOutputs`` instead.)
    public var outputs: AsyncStream<W.Output> { runtime.outputs }

    /// The root's outputs with the sequence of the log entry whose action emitted each, for a
    /// durable host whose configuration delivers them until acknowledged
    /// (`DurableConfiguration.outputDelivery = .untilAcknowledged`): a resumed host delivers
    /// first, again, every output its consumer had not acknowledged, then the new ones. One
    /// consumer: iterate it once; acknowledge with ``acknowledgeOutputs(through:)``.
    public var acknowledgeableOutputs: AsyncStream<RootOutput<W.Output>> { runtime.acknowledgeableOutputs }

    /// Records that the outputs up to `sequence` (a ``RootOutput/sequence``) were handled: an
    /// entry in the log, committed as the mode commits entries, after which a resume no longer
    /// delivers them. Acknowledge after the output's effect is done (at least once: an output
    /// handled but not yet acknowledged at a crash is delivered again).
    public func acknowledgeOutputs(through sequence: UInt64) {
        runtime.enqueue(.acknowledge(sequence))
    }

    /// Ends the tree: every node ends, every worker is cancelled and every side effect's lifetime
    /// ends; later sends are discarded and reported. Queued work before the stop is applied first.
    ///
    /// It returns at once when another thread is applying the host's work (a background commit's
    /// notice, a worker, a timer or a signal): the stop then happens on that thread, shortly after.
    /// Until it has, a durable host still owns its instance; call ``stopAndWait()`` before
    /// resuming the instance or reading its log in the same process.
    public func stop() {
        runtime.enqueue(.stop(nil))
    }

    /// Calls `handler` once the host has stopped, for any reason (a stop, a failure, a finished
    /// workflow); at once if it has. It runs on the thread that stopped the host.
    public func whenStopped(_ handler: @escaping @Sendable () -> Void) {
        runtime.whenStopped(handler)
    }

    /// Stops the host (as ``stopAndWait()``) only if none of its task attempts is in flight
    /// (calling out, or its outcome on its way to the log): a point where the instance can move
    /// to another host without an attempt abandoned, whose call would run again there. From the
    /// check on, no attempt starts here (one about to start runs after a resume, where the
    /// instance goes). Whether it stopped; a host with an attempt in flight goes on as it was.
    public func stopIfNoAttemptsInFlight() async -> Bool {
        guard runtime.drainGate.startDrainingIfIdle() else { return false }
        await stopAndWait()
        return true
    }

    /// Lets the attempts in flight finish and commits their outcomes, for a graceful stop: from
    /// now on no task attempt starts (one not started runs after a resume), those running get
    /// until `deadline` to return, and each outcome is applied and committed before this
    /// returns. An attempt still running at the deadline is abandoned: its task logs that it was
    /// (the state is unchanged, so a resume runs the attempt again, once, under the same
    /// idempotency key) and its outcome, if it comes, is dropped. Stop the host afterwards
    /// (``stopAndWait()``); the host goes on applying what else arrives until then.
    public func drain(within deadline: Duration) async -> DrainReport {
        let gate = runtime.drainGate
        gate.startDraining()
        if await !gate.idle(within: deadline) {
            gate.abandonRemaining()
            // The abandonments are reported at once; the grace covers a host busy applying.
            _ = await gate.idle(within: .seconds(2))
        }
        await flush()
        let counts = gate.counts
        return DrainReport(drained: counts.drained, abandoned: counts.abandoned)
    }

    /// Stops (see ``stop()``) and returns once the host has: its nodes ended, its workers
    /// cancelled, its side effects' lifetimes ended, and (a durable host) what it held committed
    /// and its instance released. A worker that does not heed cancellation may still be running
    /// then; what it emits is discarded. The host still holds its durable store until it is
    /// gone: to let go of the store's files at once, close the store (`WorkflowStore.close()`).
    public func stopAndWait() async {
        _ = await Waiter.wait { runtime.enqueue(.stop($0)) }
    }
}

extension WorkflowHost where W: FinishingWorkflow {
    /// The workflow's final output (see ``FinishingWorkflow``), once the action that emitted it
    /// is committed (a durable host) and released; the host then stops by itself. A durable
    /// instance that finished before a restart finishes again when resumed: replay emits the
    /// same output. Throws ``StoppedBeforeFinishing`` if the host stops or fails first. Any
    /// number of callers may wait, from any task; waiting is not cancelled with the task.
    public var completion: W.Output {
        get async throws(StoppedBeforeFinishing) { try await runtime.completion.wait() }
    }
}

/// What a graceful stop's drain (``WorkflowHost/drain(within:)``) did with the task attempts
/// in flight.
public struct DrainReport: Sendable, Equatable, CustomStringConvertible {
    /// Attempts that returned within the deadline, their outcomes committed.
    public var drained: Int
    /// Attempts still running at the deadline: logged as abandoned, run again after a resume.
    public var abandoned: Int

    public init(drained: Int = 0, abandoned: Int = 0) {
        self.drained = drained
        self.abandoned = abandoned
    }

    public static func + (lhs: DrainReport, rhs: DrainReport) -> DrainReport {
        DrainReport(drained: lhs.drained + rhs.drained, abandoned: lhs.abandoned + rhs.abandoned)
    }

    public var description: String { "\(drained) drained, \(abandoned) abandoned" }
}

/// A running ``WorkflowHost/observeRenderings(_:)``; cancel it to stop the callbacks.
public final class RenderingObservation: Sendable {
    private let onCancel: Lock<(@Sendable () -> Void)?>

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Lock(onCancel)
    }

    /// Stops the callbacks (idempotent).
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }
}
