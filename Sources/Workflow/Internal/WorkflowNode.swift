/// A live node of the tree, seen without its workflow type.
protocol AnyWorkflowNode: AnyObject {
    var id: NodeID { get }
    var info: NodeInfo { get }
    /// The node's state, boxed (snapshots, digests, time travel).
    var anyState: Any { get }
    /// The node's props, boxed.
    var anyWorkflow: Any { get }
    /// The declared workers' keys and start sequences.
    var workerStarts: [(key: String, sequence: UInt64)] { get }
    /// Ends the node, its children, workers and side effects (effects are queued in the batch).
    func tearDown()
    func deliverWorkerOutput<Value>(recordID: UInt64, value: Value) -> WorkOutcome
}

/// The runtime's node for one workflow: its props, its state, and what its last render declared.
final class WorkflowNode<W: Workflow>: AnyWorkflowNode, RenderContextBackend {
    typealias WorkflowType = W

    // Exclusivity is not checked dynamically on these properties: they are touched only by the
    // thread currently draining the host's queue, and no access to one of them overlaps another
    // access to the same property (user code run during an access — apply, render — cannot reach
    // the node). Dynamic checks cost a quarter of a render pass.

    let id: NodeID
    let info: NodeInfo
    @exclusivity(unchecked) private(set) var workflow: W
    @exclusivity(unchecked) private(set) var state: W.State
    // The runtime context owns the tree (through the root) and outlives every node.
    unowned(unsafe) let runtime: RuntimeContext
    /// Where outputs go: the parent's output map (or the host, at the root); `nil` when the
    /// workflow has no output.
    @exclusivity(unchecked) var outputHandler: ((W.Output) -> Void)?

    private var context: RenderContext<W>!
    @exclusivity(unchecked) private var sinkTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var nextSinkTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var children: [ChildKey: any AnyWorkflowNode] = [:]
    @exclusivity(unchecked) private var nextChildren: [ChildKey: any AnyWorkflowNode] = [:]
    @exclusivity(unchecked) private var workers: [WorkerKey: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var nextWorkers: [WorkerKey: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var workersByID: [UInt64: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var sideEffects: [AnyHashable: Lifetime] = [:]
    @exclusivity(unchecked) private var nextSideEffects: [AnyHashable: Lifetime] = [:]

    init(workflow: W, path: NodePath, runtime: RuntimeContext) {
        self.id = runtime.makeID()
        self.info = NodeInfo(path: path)
        self.workflow = workflow
        self.state = runtime.restorer?.restoredState(at: path, as: W.State.self) ?? workflow.makeInitialState()
        self.runtime = runtime
        self.context = RenderContext(backend: self, programmerErrors: runtime.programmerErrors)
        runtime.register(self)
    }

    // MARK: Props and actions

    /// New props from the parent: `workflowDidChange`, before this node renders.
    func update(workflow newWorkflow: W) {
        let previous = workflow
        workflow = newWorkflow
        newWorkflow.workflowDidChange(from: previous, state: &state)
    }

    /// Applies `action` and runs the output cascade up the tree; `origin` is `nil` inside a cascade.
    func apply<Action: WorkflowAction>(_ action: Action, origin: ActionOrigin?) where Action.WorkflowType == W {
        let completions = runtime.observers.isEmpty ? [] : runtime.observers.compactMap {
            $0.actionWillApply(ActionEvent(node: info, action: action, origin: origin, stateBefore: state))
        }
        if let origin { runtime.lastApplied = (action, info.path, origin) }
        let output = action.apply(toState: &state, context: ApplyContext(props: workflow, now: runtime.currentTime))
        for completion in completions { completion(state, output) }
        if let output { outputHandler?(output) }
    }

    var anyState: Any { state }

    var anyWorkflow: Any { workflow }

    var workerStarts: [(key: String, sequence: UInt64)] {
        workers.values.map { ($0.key, $0.startSequence) }
    }

    func declaresSink<Action>(of type: Action.Type) -> Bool {
        sinkTypes.contains(ObjectIdentifier(type))
    }

    func deliverWorkerOutput<Value>(recordID: UInt64, value: Value) -> WorkOutcome {
        guard let record = workersByID[recordID] else { return .discarded(.workerEnded) }
        return record.deliver(value)
    }

    // MARK: Render pass

    func render() -> W.Rendering {
        let outerNode = runtime.renderingNode
        runtime.renderingNode = id
        context.isValid = true
        let rendering = workflow.render(state: state, context: context)
        context.isValid = false
        runtime.renderingNode = outerNode

        swap(&sinkTypes, &nextSinkTypes)
        nextSinkTypes.removeAll(keepingCapacity: true)
        if !children.isEmpty || !nextChildren.isEmpty {
            for leftover in children.values { leftover.tearDown() }
            swap(&children, &nextChildren)
            nextChildren.removeAll(keepingCapacity: true)
        }
        if !workers.isEmpty || !nextWorkers.isEmpty {
            for leftover in workers.values { end(leftover) }
            swap(&workers, &nextWorkers)
            nextWorkers.removeAll(keepingCapacity: true)
        }
        if !sideEffects.isEmpty || !nextSideEffects.isEmpty {
            runtime.effects.lifetimesToEnd.append(contentsOf: sideEffects.values)
            swap(&sideEffects, &nextSideEffects)
            nextSideEffects.removeAll(keepingCapacity: true)
        }
        return rendering
    }

    func tearDown() {
        context.isValid = false
        for child in children.values { child.tearDown() }
        children.removeAll()
        for worker in workers.values { end(worker) }
        workers.removeAll()
        runtime.effects.lifetimesToEnd.append(contentsOf: sideEffects.values)
        sideEffects.removeAll()
        sinkTypes.removeAll()
        runtime.unregister(self)
    }

    private func end(_ worker: any WorkerRecordProtocol) {
        worker.ended = true
        workersByID[worker.id] = nil
        runtime.effects.workersToStop.append(worker)
    }

    // MARK: RenderContextBackend

    func makeSink<Action: WorkflowAction>(of actionType: Action.Type) -> Sink<Action> where Action.WorkflowType == W {
        let type = ObjectIdentifier(actionType)
        if !nextSinkTypes.contains(type) { nextSinkTypes.append(type) }
        return Sink(target: .node(runtime.queue, id))
    }

    func render<Child: Workflow, Action: WorkflowAction>(
        _ child: Child, key: String, outputMap: @escaping (Child.Output) -> Action
    ) -> Child.Rendering where Action.WorkflowType == W {
        let childKey = ChildKey(type: ObjectIdentifier(Child.self), key: key)
        // The key holds the child's workflow type, so a node found under it is a WorkflowNode<Child>.
        let node: WorkflowNode<Child>
        if let existing = children.removeValue(forKey: childKey) {
            node = unsafeDowncast(existing as AnyObject, to: WorkflowNode<Child>.self)
            node.update(workflow: child)
        } else if let rendered = nextChildren[childKey] {
            runtime.programmerErrors.raise(
                "\(info.workflowType) rendered the child \(NodePath.typeName(Child.self)) with key \"\(key)\" twice in one render pass; give each a distinct key")
            node = unsafeDowncast(rendered as AnyObject, to: WorkflowNode<Child>.self)
            node.update(workflow: child)
        } else {
            node = WorkflowNode<Child>(
                workflow: child, path: info.path.appending(workflowType: NodePath.typeName(Child.self), key: key), runtime: runtime)
        }
        if Child.Output.self != Never.self {
            node.outputHandler = { [unowned(unsafe) self] output in self.apply(outputMap(output), origin: nil) }
        }
        nextChildren[childKey] = node
        return node.render()
    }

    func run<Wk: Worker, Action: WorkflowAction>(
        _ worker: Wk, key: String, origin: ActionOrigin, outputMap: @escaping (Wk.Output) -> Action
    ) where Action.WorkflowType == W {
        declareWorker(worker, key: key, origin: origin, outputMap: outputMap)
    }

    func runTimer<Action: WorkflowAction>(key: String, deadline: WallTime, action: @escaping () -> Action)
    where Action.WorkflowType == W {
        declareWorker(DeadlineWorker(deadline: deadline, clock: runtime.clock), key: key, origin: .timer) { _ in action() }
    }

    private func declareWorker<Wk: Worker, Action: WorkflowAction>(
        _ worker: Wk, key: String, origin: ActionOrigin, outputMap: @escaping (Wk.Output) -> Action
    ) where Action.WorkflowType == W {
        let workerKey = WorkerKey(type: ObjectIdentifier(Wk.self), key: key)
        if nextWorkers[workerKey] != nil {
            runtime.programmerErrors.raise(
                "\(info.workflowType) declared the worker \(Wk.self) with key \"\(key)\" twice in one render pass; give each a distinct key")
            return
        }
        if let existing = workers.removeValue(forKey: workerKey) {
            if let same = existing as? WorkerRecord<Wk, Action>, same.worker.isEquivalent(to: worker) {
                same.outputMap = outputMap
                nextWorkers[workerKey] = same
                return
            }
            end(existing)
        }
        let startSequence = runtime.restorer?.restoredWorkerStart(at: info.path, key: key) ?? runtime.currentSequence
        let idempotencyKey = runtime.instanceID.map { "\($0)\(info.path)#\(key)@\(startSequence)" }
        let record = WorkerRecord(
            id: runtime.makeID(), key: key, worker: worker, origin: origin, startSequence: startSequence,
            idempotencyKey: idempotencyKey, outputMap: outputMap, node: self)
        nextWorkers[workerKey] = record
        workersByID[record.id] = record
        runtime.effects.workersToStart.append(record)
    }

    func dependency(_ type: ObjectIdentifier) -> (any Sendable)? { runtime.dependencies[type] }

    func runSideEffect(key: AnyHashable, action: @escaping (Lifetime) -> Void) {
        if nextSideEffects[key] != nil {
            runtime.programmerErrors.raise(
                "\(info.workflowType) declared the side effect \(key) twice in one render pass; give each a distinct key")
            return
        }
        if let existing = sideEffects.removeValue(forKey: key) {
            nextSideEffects[key] = existing
            return
        }
        let lifetime = Lifetime()
        nextSideEffects[key] = lifetime
        runtime.effects.sideEffectsToStart.append((lifetime, action))
    }
}
