/// A live node of the tree, seen without its workflow type.
protocol AnyWorkflowNode: AnyObject {
    var id: NodeID { get }
    var info: NodeInfo { get }
    /// Ends the node, its children, workers and side effects (effects are queued in the batch).
    func tearDown()
    func deliverWorkerOutput<Value>(recordID: UInt64, value: Value) -> WorkOutcome
}

/// The runtime's node for one workflow: its props, its state, and what its last render declared.
final class WorkflowNode<W: Workflow>: AnyWorkflowNode, RenderContextBackend {
    typealias WorkflowType = W

    let id: NodeID
    let info: NodeInfo
    private(set) var workflow: W
    private(set) var state: W.State
    unowned let runtime: RuntimeContext
    /// Where outputs go: the parent's output map (or the host, at the root).
    var outputHandler: (W.Output) -> Void = { _ in }

    private var context: RenderContext<W>!
    private var sinkTypes: [ObjectIdentifier] = []
    private var nextSinkTypes: [ObjectIdentifier] = []
    private var children: [ChildKey: any AnyWorkflowNode] = [:]
    private var nextChildren: [ChildKey: any AnyWorkflowNode] = [:]
    private var workers: [WorkerKey: any WorkerRecordProtocol] = [:]
    private var nextWorkers: [WorkerKey: any WorkerRecordProtocol] = [:]
    private var workersByID: [UInt64: any WorkerRecordProtocol] = [:]
    private var sideEffects: [AnyHashable: Lifetime] = [:]
    private var nextSideEffects: [AnyHashable: Lifetime] = [:]

    init(workflow: W, path: NodePath, runtime: RuntimeContext) {
        self.id = runtime.makeID()
        self.info = NodeInfo(path: path)
        self.workflow = workflow
        self.state = workflow.makeInitialState()
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
        let output = action.apply(toState: &state, context: ApplyContext(props: workflow))
        for completion in completions { completion(state, output) }
        if let output { outputHandler(output) }
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
        let outerWorkflow = runtime.renderingWorkflow
        runtime.renderingWorkflow = info.workflowType
        context.isValid = true
        let rendering = workflow.render(state: state, context: context)
        context.isValid = false
        runtime.renderingWorkflow = outerWorkflow

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
        let node: WorkflowNode<Child>
        if let rendered = nextChildren[childKey] as? WorkflowNode<Child> {
            runtime.programmerErrors.raise(
                "\(info.workflowType) rendered the child \(NodePath.typeName(Child.self)) with key \"\(key)\" twice in one render pass; give each a distinct key")
            node = rendered
        } else if let existing = children.removeValue(forKey: childKey) as? WorkflowNode<Child> {
            node = existing
        } else {
            node = WorkflowNode<Child>(
                workflow: child, path: info.path.appending(workflowType: NodePath.typeName(Child.self), key: key), runtime: runtime)
            nextChildren[childKey] = node
            node.outputHandler = { [unowned self] output in self.apply(outputMap(output), origin: nil) }
            return node.render()
        }
        node.update(workflow: child)
        node.outputHandler = { [unowned self] output in self.apply(outputMap(output), origin: nil) }
        nextChildren[childKey] = node
        return node.render()
    }

    func run<Wk: Worker, Action: WorkflowAction>(_ worker: Wk, key: String, outputMap: @escaping (Wk.Output) -> Action)
    where Action.WorkflowType == W {
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
        let record = WorkerRecord(id: runtime.makeID(), key: key, worker: worker, outputMap: outputMap, node: self)
        nextWorkers[workerKey] = record
        workersByID[record.id] = record
        runtime.effects.workersToStart.append(record)
    }

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
