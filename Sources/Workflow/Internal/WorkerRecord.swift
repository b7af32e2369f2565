/// A declared worker of one node, and its running task.
protocol WorkerRecordProtocol: AnyObject {
    var id: UInt64 { get }
    var key: String { get }
    /// The log sequence of the render pass that first declared it (idempotency keys).
    var startSequence: UInt64 { get }
    /// The render pass that stops declaring it ends it: its queued outputs are then discarded,
    /// and the release of that pass's effects stops it.
    func end()
    /// Whether a render pass stopped declaring it (it is then never started).
    var hasEnded: Bool { get }
    /// How its outputs are logged.
    var origin: ActionOrigin { get }
    /// The worker's type name.
    var workerTypeName: String { get }
    /// What the worker waits for, if it says.
    var wait: WorkerWait? { get }
    /// The type of the actions its outputs become.
    var actionType: any WorkflowAction.Type { get }
    /// The declaring node.
    var node: NodeInfo { get }
    /// Whether the host can apply (and log) the actions its outputs become: always in memory.
    func isLoggable(in context: RuntimeContext) -> Bool
    func start(queue: any ActionQueue, observers: [any WorkflowObserver])
    /// Cancels the worker; `hostStopped` tells an ``EndObservingWorker`` why it ended.
    func stop(observers: [any WorkflowObserver], hostStopped: Bool)
    /// Applies `value` to `node`, the node that declared the worker (it calls this itself, so it
    /// is alive for the whole call).
    func deliver<Value, N: Workflow>(_ value: Value, to node: WorkflowNode<N>) -> WorkOutcome
}

/// Where a declared worker is in its life. A render pass declares it; the release of that pass's
/// effects starts it, unless a later pass of the same batch already stopped declaring it; the
/// pass that stops declaring it ends it (its outputs are discarded from then on), and the release
/// of that pass's effects stops it.
enum WorkerPhase {
    /// Declared; the effects of its pass are held (during replay, or until a grouped commit).
    case declared
    /// Started: its task runs and its outputs are applied.
    case running(Task<Void, Never>)
    /// No longer declared: its outputs are discarded; its task, if it started, is cancelled when
    /// it is stopped.
    case ended(Task<Void, Never>?)
    /// Stopped: its task (if any) is cancelled.
    case stopped

    var name: String {
        switch self {
        case .declared: "declared"
        case .running: "running"
        case .ended: "ended"
        case .stopped: "stopped"
        }
    }
}

final class WorkerRecord<W: Worker, Action: WorkflowAction>: WorkerRecordProtocol {
    let id: UInt64
    let key: String
    private(set) var worker: W
    let origin: ActionOrigin
    let startSequence: UInt64
    let idempotencyKey: String?
    var outputMap: (W.Output) -> Action
    private var phase = WorkerPhase.declared
    /// The declaring node as observers see it, and its id: copied, because the record outlives
    /// its node (a render pass ends the node, and the worker is stopped after that pass). The
    /// record holds no reference to the node.
    private let nodeInfo: NodeInfo
    private let nodeID: NodeID

    init(
        id: UInt64, key: String, worker: W, origin: ActionOrigin, startSequence: UInt64, idempotencyKey: String?,
        outputMap: @escaping (W.Output) -> Action, node: WorkflowNode<Action.WorkflowType>
    ) {
        self.id = id
        self.key = key
        self.worker = worker
        self.origin = origin
        self.startSequence = startSequence
        self.idempotencyKey = idempotencyKey
        self.outputMap = outputMap
        self.nodeInfo = node.info
        self.nodeID = node.id
    }

    /// A later render pass declared an equivalent worker: the record keeps running (or will start)
    /// and takes `outputMap`; one that has not started yet (its pass's effects are held: during
    /// replay, or until a grouped commit) starts with this latest declaration.
    func redeclare(_ worker: W, outputMap: @escaping (W.Output) -> Action) {
        if case .declared = phase { self.worker = worker }
        self.outputMap = outputMap
    }

    func end() {
        switch phase {
        case .declared: phase = .ended(nil)
        case .running(let task): phase = .ended(task)
        case .ended, .stopped: illegalTransition("end")
        }
    }

    var hasEnded: Bool {
        switch phase {
        case .declared, .running: false
        case .ended, .stopped: true
        }
    }

    /// A transition the lifecycle does not have: a bug in the runtime, named for whoever reads it.
    private func illegalTransition(_ transition: String) -> Never {
        preconditionFailure("worker \(W.self) (key \"\(key)\") of \(nodeInfo.workflowType) cannot \(transition) when \(phase.name)")
    }

    var workerTypeName: String { "\(W.self)" }

    var wait: WorkerWait? { (worker as? any DescribedWorker)?.wait }

    var actionType: any WorkflowAction.Type { Action.self }

    var node: NodeInfo { nodeInfo }

    func isLoggable(in context: RuntimeContext) -> Bool { context.admits(Action.self) }

    func start(queue: any ActionQueue, observers: [any WorkflowObserver]) {
        guard case .declared = phase else { illegalTransition("start") }
        let worker = self.worker, nodeID = self.nodeID, recordID = id, origin = self.origin
        let idempotencyKey = self.idempotencyKey
        let gate = queue.drainGate, reportsInFlight = W.Output.self is any InFlightReport.Type
        phase = .running(Task {
            await WorkerContext.$idempotencyKey.withValue(idempotencyKey) {
                await WorkerContext.$drainGate.withValue(gate as DrainGate?) {
                    // Every value goes to the host, also after the worker was ended: the host
                    // reports it as discarded (rule R5). The sequence ends when the task is cancelled.
                    for await value in worker.run() {
                        queue.enqueue(.work(WorkerDelivery(nodeID: nodeID, recordID: recordID, value: value, origin: origin)))
                        // An attempt's report is queued: a drain's flush now comes after it.
                        if reportsInFlight, let token = (value as? any InFlightReport)?.inFlightToken { gate.forwarded(token) }
                    }
                }
            }
        })
        for observer in observers { observer.workerDidStart(node: nodeInfo, workerType: "\(W.self)", key: key) }
    }

    func stop(observers: [any WorkflowObserver], hostStopped: Bool) {
        guard case .ended(let started) = phase else { illegalTransition("stop") }
        phase = .stopped
        // One that never started has nothing to cancel and nobody to tell.
        guard let task = started else { return }
        task.cancel()
        if let observing = worker as? any EndObservingWorker {
            observing.didEnd(idempotencyKey: idempotencyKey, becauseHostStopped: hostStopped)
        }
        for observer in observers { observer.workerDidEnd(node: nodeInfo, workerType: "\(W.self)", key: key) }
    }

    func deliver<Value, N: Workflow>(_ value: Value, to declaring: WorkflowNode<N>) -> WorkOutcome {
        guard case .running = phase else { return .discarded(.workerEnded) }
        guard let output = value as? W.Output else { return .discarded(.workerEnded) }
        guard let node = declaring as? WorkflowNode<Action.WorkflowType> else {
            preconditionFailure("worker \(W.self) of \(nodeInfo.workflowType) was handed a node of \(N.self)")
        }
        guard node.runtime.admits(Action.self) else { return .discarded(.notLoggable) }
        if let attachment = (output as? any JournalAttachable)?.journalAttachment {
            node.runtime.pendingAttachments = [attachment]
        } else if !node.runtime.pendingAttachments.isEmpty {
            node.runtime.pendingAttachments = []
        }
        node.apply(outputMap(output), origin: origin)
        return .applied
    }
}

/// Keys a worker declaration: the worker's type and the key it was declared with.
struct WorkerKey: Hashable {
    let type: ObjectIdentifier
    let key: String
}

/// Keys a child declaration: the child workflow's type and its key.
struct ChildKey: Hashable {
    let type: ObjectIdentifier
    let key: String
}

/// The worker behind a durable timer: emits once at `deadline` (at once if it has passed).
struct DeadlineWorker: Worker, DescribedWorker {
    let deadline: WallTime
    let clock: any WorkflowClock

    var wait: WorkerWait { .timer(deadline: deadline) }

    func run() -> AsyncStream<Void> {
        let deadline = self.deadline, clock = self.clock
        return AsyncStream { continuation in
            let task = Task {
                do {
                    try await clock.sleep(until: deadline)
                    continuation.yield(())
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func isEquivalent(to other: DeadlineWorker) -> Bool { deadline == other.deadline }
}
