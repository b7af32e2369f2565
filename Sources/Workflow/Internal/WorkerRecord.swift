/// A declared worker of one node, and its running task.
protocol WorkerRecordProtocol: AnyObject {
    var id: UInt64 { get }
    /// Set by the render pass that stops declaring it: its queued outputs are then discarded.
    var ended: Bool { get set }
    func start(queue: any ActionQueue, observers: [any WorkflowObserver])
    func stop(observers: [any WorkflowObserver])
    func deliver<Value>(_ value: Value) -> WorkOutcome
}

final class WorkerRecord<W: Worker, Action: WorkflowAction>: WorkerRecordProtocol {
    let id: UInt64
    let key: String
    let worker: W
    var outputMap: (W.Output) -> Action
    var ended = false
    private var task: Task<Void, Never>?
    private unowned let node: WorkflowNode<Action.WorkflowType>

    init(id: UInt64, key: String, worker: W, outputMap: @escaping (W.Output) -> Action, node: WorkflowNode<Action.WorkflowType>) {
        self.id = id
        self.key = key
        self.worker = worker
        self.outputMap = outputMap
        self.node = node
    }

    func start(queue: any ActionQueue, observers: [any WorkflowObserver]) {
        let worker = self.worker, nodeID = node.id, recordID = id
        task = Task {
            for await value in worker.run() {
                if Task.isCancelled { break }
                queue.enqueue(.work(WorkerDelivery(nodeID: nodeID, recordID: recordID, value: value), completion: nil))
            }
        }
        for observer in observers { observer.workerDidStart(node: node.info, workerType: "\(W.self)", key: key) }
    }

    func stop(observers: [any WorkflowObserver]) {
        guard let task else { return }
        task.cancel()
        self.task = nil
        for observer in observers { observer.workerDidEnd(node: node.info, workerType: "\(W.self)", key: key) }
    }

    func deliver<Value>(_ value: Value) -> WorkOutcome {
        guard !ended else { return .discarded(.workerEnded) }
        guard let output = value as? W.Output else { return .discarded(.workerEnded) }
        node.apply(outputMap(output), origin: .worker)
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
