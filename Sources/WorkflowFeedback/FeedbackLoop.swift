import DurableWorkflow
import Synchronization
import Workflow
import WorkflowLocks

/// A Mealy machine: a reducer, feedbacks that see every `(event, state)` pair and send events
/// back, and external events sent with ``send(_:)`` (rules F1-F3).
///
/// It runs on the workflow runtime: the state is stored once, in a one-node workflow; every event,
/// external or from a feedback, goes through the host's single first-in-first-out queue, so events
/// are reduced in arrival order, one at a time, never recursively and never dropped. Events sent
/// before ``start()`` are kept and reduced after it, once (F2). A durable loop logs every event
/// before its state is published and rebuilds its state by replaying the reducer; feedback
/// effects never see replayed events and start after replay (F3).
public final class FeedbackLoop<Reducer: FeedbackReducer>: Sendable {
    public typealias State = Reducer.State
    public typealias Event = Reducer.Event

    private struct Lifecycle {
        var started = false
        var stopped = false
        /// Events sent before ``start()`` or while it hands the earlier ones over, in order.
        var early: [Event] = []
        /// `start()` is handing `early` to the host: later sends queue behind it.
        var handingOverEarly = false
        var tasks: [Task<Void, Never>] = []
    }

    private let host: WorkflowHost<ReducerWorkflow<Reducer>>
    /// The node's sink: stable for the loop's life (one node, one action type).
    private let sink: Sink<EventAction<Reducer>>
    private let feedbacks: [Feedback<State, Event>]
    private let lifecycle = Lock(Lifecycle())

    private init(host: WorkflowHost<ReducerWorkflow<Reducer>>, feedbacks: [Feedback<State, Event>]) {
        self.host = host
        self.sink = host.rendering.sink
        self.feedbacks = feedbacks
    }

    deinit {
        stop()
    }

    /// An in-memory loop running `reducer` with `feedbacks`.
    public convenience init(reducer: Reducer, feedbacks: [Feedback<State, Event>] = [], configuration: HostConfiguration = HostConfiguration()) {
        var configuration = configuration
        configuration.bufferOutputs = !feedbacks.isEmpty
        self.init(host: WorkflowHost(workflow: ReducerWorkflow(reducer: reducer), configuration: configuration), feedbacks: feedbacks)
    }

    /// An in-memory loop starting at `initial` and reducing with `reduce`.
    public convenience init<S: Sendable, E: Sendable>(
        initial: S, reduce: @escaping @Sendable (inout S, E) -> Void, feedbacks: [Feedback<S, E>] = []
    ) where Reducer == ClosureReducer<S, E> {
        self.init(reducer: ClosureReducer(initial: initial, reduce: reduce), feedbacks: feedbacks)
    }

    /// The root workflow type of a durable loop's instances.
    public typealias Root = ReducerWorkflow<Reducer>

    /// `configuration` with the loop's event action registered: what a durable loop's instances
    /// run with, and what a tool that rebuilds their state (a custom `wfctl`) registers
    /// ``Root`` with.
    public static func durableConfiguration(_ configuration: DurableConfiguration = DurableConfiguration()) -> DurableConfiguration
    where Reducer: Codable, Event: Codable, State: Codable {
        var configuration = configuration
        configuration.actions.register(EventAction<Reducer>.self)
        return configuration
    }

    /// A durable loop: instance `id` of `store` is resumed (its state rebuilt by replaying the
    /// reducer over its logged events) or, if absent, started with `reducer`.
    public static func durable(
        store: WorkflowStore, id: String, reducer: Reducer, feedbacks: [Feedback<State, Event>] = [],
        configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> FeedbackLoop where Reducer: Codable, Event: Codable, State: Codable {
        var configuration = durableConfiguration(configuration)
        configuration.host.bufferOutputs = !feedbacks.isEmpty
        let host = try store.instance(id: id) == nil
            ? try store.start(ReducerWorkflow(reducer: reducer), id: id, configuration: configuration)
            : try store.resume(id: id, as: ReducerWorkflow<Reducer>.self, configuration: configuration)
        return FeedbackLoop(host: host, feedbacks: feedbacks)
    }

    /// The current state.
    public var state: State { host.rendering.state }

    /// The state now, then after every event, as an async sequence.
    public func states() -> AsyncStream<State> {
        let renderings = host.renderings()
        return AsyncStream { continuation in
            let task = Task {
                for await rendering in renderings { continuation.yield(rendering.state) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Starts the feedbacks, then reduces the events sent before now, in order; events sent
    /// meanwhile from other threads are reduced after them, in the order they were sent.
    public func start() {
        let starts = lifecycle.withLock { lifecycle -> Bool in
            guard !lifecycle.started, !lifecycle.stopped else { return false }
            lifecycle.started = true
            lifecycle.handingOverEarly = true
            lifecycle.tasks = startFeedbacks()
            return true
        }
        guard starts else { return }
        // Hands over what was kept, batch by batch (delivered outside the lock: a delivery may run
        // code that sends), until nothing is left; sends then go straight to the host.
        while true {
            let batch = lifecycle.withLock { lifecycle -> [Event] in
                if lifecycle.early.isEmpty { lifecycle.handingOverEarly = false }
                defer { lifecycle.early = [] }
                return lifecycle.early
            }
            if batch.isEmpty { return }
            for event in batch { deliver(event) }
        }
    }

    /// Sends an external event: reduced at once when the loop is idle (queued otherwise), or kept
    /// until ``start()`` if the loop has not started. Events are reduced in the order of the calls.
    public func send(_ event: Event) {
        let now = lifecycle.withLock { lifecycle -> Bool in
            if lifecycle.started && !lifecycle.handingOverEarly { return true }
            lifecycle.early.append(event)
            return false
        }
        if now { deliver(event) }
    }

    /// Sends an event (the loop must have started) and returns once it is reduced and, for a
    /// durable loop, committed.
    @discardableResult
    public func sendAndWait(_ event: Event) async -> Bool {
        await sink.sendAndWait(EventAction(event: event))
    }

    /// Returns once every event reduced so far is committed (durable loops).
    public func flush() async { await host.flush() }

    /// Stops the feedbacks and the loop. The loop's host stops in the background: for a durable
    /// loop, use ``stopAndWait()`` to know when its events are committed and its store let go.
    public func stop() {
        let tasks = endFeedbacks()
        host.stop()
        tasks.forEach { $0.cancel() }
    }

    /// Stops the feedbacks and the loop, and returns once the loop's host has stopped: for a
    /// durable loop, every event reduced so far is committed and the instance released.
    public func stopAndWait() async {
        let tasks = endFeedbacks()
        tasks.forEach { $0.cancel() }
        await host.stopAndWait()
    }

    /// Marks the loop stopped and hands over its feedbacks' tasks, to cancel.
    private func endFeedbacks() -> [Task<Void, Never>] {
        lifecycle.withLock { lifecycle -> [Task<Void, Never>] in
            lifecycle.stopped = true
            defer { lifecycle.tasks = [] }
            return lifecycle.tasks
        }
    }

    /// The error that stopped a durable loop (its log could not be written), if any.
    public var failure: (any Error)? { host.failure }

    private func deliver(_ event: Event) {
        sink.send(EventAction(event: event))
    }

    /// One task fans the loop's reductions out to one stream per feedback; one task per feedback.
    private func startFeedbacks() -> [Task<Void, Never>] {
        guard !feedbacks.isEmpty else { return [] }
        let sink = self.sink
        let send: @Sendable (Event) -> Void = { event in sink.send(EventAction(event: event)) }
        var inputs: [AsyncStream<Reduced<State, Event>>.Continuation] = []
        var tasks: [Task<Void, Never>] = []
        for feedback in feedbacks {
            let (stream, continuation) = AsyncStream.makeStream(of: Reduced<State, Event>.self)
            inputs.append(continuation)
            tasks.append(Task { await feedback.run(stream, send) })
        }
        let outputs = host.outputs
        tasks.append(Task {
            for await reduced in outputs {
                for input in inputs { input.yield(reduced) }
            }
            for input in inputs { input.finish() }
        })
        return tasks
    }
}
