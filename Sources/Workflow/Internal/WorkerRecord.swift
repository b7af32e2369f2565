/// A declared worker of one node, and its running task.
protocol WorkerRecordProtocol: AnyObject {
    var id: UInt64 { get }
    var key: String { get }
    /// The log sequence of the render pass that first declared it (idempotency keys).
    var startSequence: UInt64 { get }
    /// Set by the render pass that stops declaring it: its queued outputs are then discarded.
    var ended: Bool { get set }
    /// How its outputs are logged.
    var origin: ActionOrigin { get }
    /// The worker's type name.
    var workerTypeName: String { get }
    /// What the worker waits for, if it says.
    var wait: WorkerWait? { get }
    func start(queue: any ActionQueue, observers: [any WorkflowObserver])
    /// Cancels the worker; `hostStopped` tells an ``EndObservingWorker`` why it ended.
    func stop(observers: [any WorkflowObserver], hostStopped: Bool)
    /// Applies `value` to `node`, the node that declared the worker (it calls this itself, so it
    /// is alive for the whole call).
    func deliver<Value, N: Workflow>(_ value: Value, to node: WorkflowNode<N>) -> WorkOutcome
}

final class WorkerRecord<W: Worker, Action: WorkflowAction>: WorkerRecordProtocol {
    let id: UInt64
    let key: String
    private(set) var worker: W
    let origin: ActionOrigin
    let startSequence: UInt64
    let idempotencyKey: String?
    var outputMap: (W.Output) -> Action
    var ended = false
    private var task: Task<Void, Never>?
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
        if task == nil { self.worker = worker }
        self.outputMap = outputMap
    }

    var workerTypeName: String { "\(W.self)" }

    var wait: WorkerWait? { (worker as? any DescribedWorker)?.wait }

    func start(queue: any ActionQueue, observers: [any WorkflowObserver]) {
        let worker = self.worker, nodeID = self.nodeID, recordID = id, origin = self.origin
        let idempotencyKey = self.idempotencyKey
        task = Task {
            await WorkerContext.$idempotencyKey.withValue(idempotencyKey) {
                // Every value goes to the host, also after the worker was ended: the host reports
                // it as discarded (rule R5). The sequence ends when the task is cancelled.
                for await value in worker.run() {
                    queue.enqueue(.work(WorkerDelivery(nodeID: nodeID, recordID: recordID, value: value, origin: origin)))
                }
            }
        }
        for observer in observers { observer.workerDidStart(node: nodeInfo, workerType: "\(W.self)", key: key) }
    }

    func stop(observers: [any WorkflowObserver], hostStopped: Bool) {
        guard let task else { return }
        task.cancel()
        self.task = nil
        if let observing = worker as? any EndObservingWorker {
            observing.didEnd(idempotencyKey: idempotencyKey, becauseHostStopped: hostStopped)
        }
        for observer in observers { observer.workerDidEnd(node: nodeInfo, workerType: "\(W.self)", key: key) }
    }

    func deliver<Value, N: Workflow>(_ value: Value, to declaring: WorkflowNode<N>) -> WorkOutcome {
        guard !ended else { return .discarded(.workerEnded) }
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
