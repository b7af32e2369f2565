/// The state a host's nodes share, touched only by the thread currently running the host
/// (the single drainer of its queue), so it needs no lock of its own.
final class RuntimeContext {
    unowned(unsafe) let queue: any ActionQueue
    let observers: [any WorkflowObserver]
    let programmerErrors: ProgrammerErrorPolicy
    // Not checked dynamically for exclusivity: drainer-only, never accessed re-entrantly.
    @exclusivity(unchecked) var nodes: [NodeID: any AnyWorkflowNode] = [:]
    @exclusivity(unchecked) var effects = EffectBatch()
    /// The node whose render is running, for the "sent during render" message.
    @exclusivity(unchecked) var renderingNode: NodeID = 0
    @exclusivity(unchecked) private var nextID: UInt64 = 1

    /// The type of the workflow whose render is running.
    var renderingWorkflow: String { nodes[renderingNode]?.info.workflowType ?? "an unknown workflow" }

    init(queue: any ActionQueue, observers: [any WorkflowObserver], programmerErrors: ProgrammerErrorPolicy) {
        self.queue = queue
        self.observers = observers
        self.programmerErrors = programmerErrors
    }

    func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    func register(_ node: any AnyWorkflowNode) {
        nodes[node.id] = node
        for observer in observers { observer.nodeDidStart(node.info) }
    }

    func unregister(_ node: any AnyWorkflowNode) {
        nodes[node.id] = nil
        for observer in observers { observer.nodeDidEnd(node.info) }
    }

    func discarded(_ description: String, node: NodeInfo?, reason: DiscardReason, origin: ActionOrigin) {
        let discard = DiscardedAction(actionType: description, node: node, reason: reason, origin: origin)
        for observer in observers { observer.actionDiscarded(discard) }
    }
}

/// The consequences of applied actions that leave the runtime: they are released only after a
/// render pass completes (and, for a durable host, after the log entry is committed).
struct EffectBatch {
    var workersToStop: [any WorkerRecordProtocol] = []
    var workersToStart: [any WorkerRecordProtocol] = []
    var lifetimesToEnd: [Lifetime] = []
    var sideEffectsToStart: [(Lifetime, (Lifetime) -> Void)] = []

    var isEmpty: Bool {
        workersToStop.isEmpty && workersToStart.isEmpty && lifetimesToEnd.isEmpty && sideEffectsToStart.isEmpty
    }

    /// Stops what ended, then starts what is new and still declared (a worker or side effect
    /// declared and ended within one batch never starts).
    mutating func release(queue: any ActionQueue, observers: [any WorkflowObserver]) {
        if isEmpty { return }
        let stopping = workersToStop, starting = workersToStart
        let ending = lifetimesToEnd, sideEffects = sideEffectsToStart
        self = EffectBatch()
        for worker in stopping { worker.stop(observers: observers) }
        for lifetime in ending { lifetime.end() }
        for (lifetime, action) in sideEffects where !lifetime.hasEnded { action(lifetime) }
        for worker in starting where !worker.ended { worker.start(queue: queue, observers: observers) }
    }
}
