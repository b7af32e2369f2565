import WorkflowMemory

/// A live node of the tree, seen without its workflow type.
protocol AnyWorkflowNode: AnyObject {
    var id: NodeID { get }
    var info: NodeInfo { get }
    /// `ObjectIdentifier` of the node's workflow type (a cheap type check before a downcast).
    var workflowTypeID: ObjectIdentifier { get }
    /// The node's state, boxed (snapshots, time travel).
    var anyState: Any { get }
    /// `info.path.description`, made once per node (digests order and hash nodes by it).
    var pathDescription: String { get }
    /// Hands the node's path and state, typed, to `visitor` (digests).
    func visitState<Visitor: NodeStateVisitor>(_ visitor: inout Visitor) throws
    /// Where the node's state lies (the same for the node's whole life), and its type.
    var stateCell: NodeStateCell { get }
    /// The node's props, boxed.
    var anyWorkflow: Any { get }
    /// The declared workers' keys and start sequences.
    var workerStarts: [(key: String, sequence: UInt64)] { get }
    /// The declared workers, described.
    var declaredWorkers: [DeclaredWorker] { get }
    /// Ends the node, its children, workers and side effects (effects are queued in the batch).
    func tearDown()
    func deliverWorkerOutput<Value>(recordID: UInt64, value: Value) -> WorkOutcome
    /// Applies an action sent through one of this node's sinks, with its cascade.
    func applySent(_ action: any WorkflowAction) -> WorkOutcome
    /// Hands a cancel request to the node (if its workflow is a ``CancellableWorkflow``), with its
    /// output cascade, then to its children as its policy says (rule O2).
    func deliverCancellation(_ request: CancellationRequest)
}

/// The runtime's node for one workflow: its props, its state, and what its last render declared.
final class WorkflowNode<W: Workflow>: AnyWorkflowNode, RenderContextBackend {
    typealias WorkflowType = W

    // Exclusivity is not checked dynamically on these properties: they are touched only by the
    // thread currently draining the host's queue, and no access to one of them overlaps another
    // access to the same property (user code run during an access — apply, render — cannot reach
    // the node). Dynamic checks on every access would be a large part of a render pass.

    let id: NodeID
    let info: NodeInfo
    /// Made on first use: only digests and snapshots need it, not node creation.
    private(set) lazy var pathDescription: String = info.path.description
    @exclusivity(unchecked) private(set) var workflow: W
    /// The state, in a slot of its own whose storage never moves: digests read it in place
    /// without a call into the node.
    private let stateSlot: ValueSlot<W.State>
    // Owner: the runtime context holds every live node (`nodes`), so it outlives each of them.
    unowned(unsafe) let runtime: RuntimeContext
    /// Where outputs go: the parent's output map (or the host, at the root); `nil` when the
    /// workflow has no output.
    @exclusivity(unchecked) var outputHandler: ((W.Output) -> Void)?

    @exclusivity(unchecked) private var context: RenderContext<W>!
    /// The context, reached without reference counting on the render path (`context` owns it).
    @exclusivity(unchecked) private var contextRef: Unmanaged<RenderContext<W>>!
    /// The action types a render pass has declared sinks for, each with the number of the last
    /// pass that declared it: a type is declared now when that is the latest pass. Kept across
    /// passes so that a pass declaring the same sinks as the last one changes no array.
    @exclusivity(unchecked) private var sinkTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var sinkPasses: [UInt64] = []
    @exclusivity(unchecked) private var renderPasses: UInt64 = 0
    @exclusivity(unchecked) private var children = ChildList()
    @exclusivity(unchecked) private var workers: [WorkerKey: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var nextWorkers: [WorkerKey: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var workersByID: [UInt64: any WorkerRecordProtocol] = [:]
    @exclusivity(unchecked) private var sideEffects: [AnyHashable: Lifetime] = [:]
    @exclusivity(unchecked) private var nextSideEffects: [AnyHashable: Lifetime] = [:]

    deinit {
        stateSlot.deinitialize()
    }

    init(workflow: W, path: NodePath, runtime: RuntimeContext) {
        self.id = runtime.makeID()
        self.info = NodeInfo(path: path)
        self.workflow = workflow
        self.stateSlot = ValueSlot(runtime.restorer?.restoredState(at: path, as: W.State.self) ?? workflow.makeInitialState())
        self.runtime = runtime
        self.context = RenderContext(node: self, programmerErrors: runtime.programmerErrors)
        self.contextRef = Unmanaged.passUnretained(context)
        runtime.register(self)
    }

    // MARK: Props and actions

    /// New props from the parent: `workflowDidChange`, before this node renders.
    func update(workflow newWorkflow: W) {
        let previous = workflow
        workflow = newWorkflow
        newWorkflow.workflowDidChange(from: previous, state: &stateSlot.value)
    }

    /// Applies `action` and runs the output cascade up the tree; `origin` is `nil` inside a cascade.
    func apply<Action: WorkflowAction>(_ action: Action, origin: ActionOrigin?) where Action.WorkflowType == W {
        if let origin, runtime.recordsActions {
            runtime.setLastApplied(action)
            runtime.lastAppliedPath = info.path
            runtime.lastAppliedOrigin = origin
        }
        guard runtime.observers.isEmpty else { return applyObserved(action, origin: origin) }
        action._apply(toState: &stateSlot.value, props: workflow, now: runtime.currentTime, versions: runtime.versions) { output in
            outputHandler?(output)
        }
    }

    @inline(never)
    private func applyObserved<Action: WorkflowAction>(_ action: Action, origin: ActionOrigin?) where Action.WorkflowType == W {
        let completions = runtime.observers.compactMap {
            $0.actionWillApply(ActionEvent(node: info, action: action, origin: origin, stateBefore: stateSlot.value))
        }
        let output = action.apply(
            toState: &stateSlot.value, context: ApplyContext(props: workflow, now: runtime.currentTime, versions: runtime.versions))
        for completion in completions { completion(stateSlot.value, output) }
        if let output { outputHandler?(output) }
    }

    func applySent(_ action: any WorkflowAction) -> WorkOutcome {
        applySent(opened: action)
    }

    private func applySent<Action: WorkflowAction>(opened action: Action) -> WorkOutcome {
        // A sink addresses the node that declared it, so the types agree; checked (one compare)
        // before the downcast, as replay does, so a mismatch is reported instead of trusted.
        guard ObjectIdentifier(Action.WorkflowType.self) == ObjectIdentifier(W.self) else {
            return .discarded(.actionTypeNotDeclared)
        }
        let node = unsafeDowncast(self, to: WorkflowNode<Action.WorkflowType>.self)
        guard node.declaresSink(of: Action.self) else { return .discarded(.actionTypeNotDeclared) }
        guard runtime.admits(Action.self) else { return .discarded(.notLoggable) }
        node.apply(action, origin: .sink)
        return .applied
    }

    func deliverCancellation(_ request: CancellationRequest) {
        if let cancellable = workflow as? any CancellableWorkflow {
            guard handleCancellation(cancellable, request) == .propagate else { return }
        }
        // Children do not change outside a render pass: the handlers above changed states only.
        for child in children.nodes { child.deliverCancellation(request) }
    }

    /// Runs `workflow`'s handler (the node's own workflow, opened as a `CancellableWorkflow`)
    /// on the node's state; its policy for the children.
    private func handleCancellation<C: CancellableWorkflow>(_ workflow: C, _ request: CancellationRequest) -> ChildCancellation {
        // `C` is `W` (the node's workflow opened from the existential): a checked cast, on a path
        // taken once per cancel request and node.
        guard let node = (self as AnyObject) as? WorkflowNode<C> else { return .propagate }
        if let output = workflow.cancellationRequested(request, state: &node.stateSlot.value) { node.outputHandler?(output) }
        return workflow.childCancellation
    }

    var anyState: Any { stateSlot.value }

    func visitState<Visitor: NodeStateVisitor>(_ visitor: inout Visitor) throws {
        try visitor.visit(path: info.path, pathDescription: pathDescription, state: stateSlot.value)
    }

    var stateCell: NodeStateCell { stateSlot.cell }

    var workflowTypeID: ObjectIdentifier { ObjectIdentifier(W.self) }

    var anyWorkflow: Any { workflow }

    var workerStarts: [(key: String, sequence: UInt64)] {
        workers.values.map { ($0.key, $0.startSequence) }
    }

    var declaredWorkers: [DeclaredWorker] {
        workers.values.map {
            DeclaredWorker(path: info.path, key: $0.key, sequence: $0.startSequence, origin: $0.origin,
                           workerType: $0.workerTypeName, wait: $0.wait)
        }
    }

    func declaresSink<Action>(of type: Action.Type) -> Bool {
        guard let index = sinkTypes.firstIndex(of: ObjectIdentifier(type)) else { return false }
        return sinkPasses[index] == renderPasses
    }

    func deliverWorkerOutput<Value>(recordID: UInt64, value: Value) -> WorkOutcome {
        guard let record = workersByID[recordID] else { return .discarded(.workerEnded) }
        return record.deliver(value, to: self)
    }

    // MARK: Render pass

    func render() -> W.Rendering {
        let outerNode = runtime.renderingNode
        runtime.renderingNode = id
        renderPasses += 1
        let rendering = contextRef._withUnsafeGuaranteedRef { context in
            context.isValid = true
            defer { context.isValid = false }
            return workflow.render(state: stateSlot.value, context: context)
        }
        runtime.renderingNode = outerNode

        if !children.isEmpty { children.finishPass { $0.tearDown() } }
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
        children.removeAll { $0.tearDown() }
        for worker in workers.values { end(worker) }
        workers.removeAll()
        runtime.effects.lifetimesToEnd.append(contentsOf: sideEffects.values)
        sideEffects.removeAll()
        sinkTypes.removeAll()
        sinkPasses.removeAll()
        runtime.unregister(self)
    }

    private func end(_ worker: any WorkerRecordProtocol) {
        worker.end()
        workersByID[worker.id] = nil
        runtime.effects.workersToStop.append(worker)
        runtime.declarationVersion &+= 1
    }

    // MARK: RenderContextBackend

    var clock: any WorkflowClock { runtime.clock }

    var versions: InstanceVersions? { runtime.versions }

    func makeSink<Action: WorkflowAction>(of actionType: Action.Type) -> Sink<Action> where Action.WorkflowType == W {
        let type = ObjectIdentifier(actionType)
        if let index = sinkTypes.firstIndex(of: type) {
            sinkPasses[index] = renderPasses
        } else {
            sinkTypes.append(type)
            sinkPasses.append(renderPasses)
        }
        return Sink(target: .node(runtime.queue, id))
    }

    func render<Child: Workflow, Action: WorkflowAction>(
        _ child: Child, key: String, outputMap: @escaping (Child.Output) -> Action
    ) -> Child.Rendering where Action.WorkflowType == W {
        childNode(child, key: key)._withUnsafeGuaranteedRef { node in
            if Child.Output.self != Never.self {
                // Owner: this node's child list holds the child, and the child emits only while it
                // is registered, which ends before this node's teardown completes.
                node.outputHandler = { [unowned(unsafe) self] output in self.apply(outputMap(output), origin: nil) }
            }
            return node.render()
        }
    }

    func render<Child: Workflow>(_ child: Child, key: String) -> Child.Rendering where Child.Output == Never {
        childNode(child, key: key)._withUnsafeGuaranteedRef { $0.render() }
    }

    /// The node for a child declared in this pass, with its props updated (or a new node); the
    /// child list holds it.
    private func childNode<Child: Workflow>(_ child: Child, key: String) -> Unmanaged<WorkflowNode<Child>> {
        let childKey = ChildKey(type: ObjectIdentifier(Child.self), key: key)
        // The key holds the child's workflow type, so a node found under it is a WorkflowNode<Child>.
        switch children.match(childKey) {
        case .kept(let existing):
            let node = unsafeBitCast(existing, to: Unmanaged<WorkflowNode<Child>>.self)
            node._withUnsafeGuaranteedRef { $0.update(workflow: child) }
            return node
        case .duplicate(let rendered):
            runtime.programmerErrors.raise(
                "\(info.workflowType) rendered the child \(NodePath.typeName(Child.self)) with key \"\(key)\" twice in one render pass; give each a distinct key")
            let node = unsafeBitCast(rendered, to: Unmanaged<WorkflowNode<Child>>.self)
            node._withUnsafeGuaranteedRef { $0.update(workflow: child) }
            return node
        case .new:
            let node = WorkflowNode<Child>(
                workflow: child, path: info.path.appending(workflowType: NodePath.typeName(Child.self), key: key), runtime: runtime)
            children.add(childKey, node: node)
            return Unmanaged.passUnretained(node)
        }
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
                same.redeclare(worker, outputMap: outputMap)
                nextWorkers[workerKey] = same
                return
            }
            end(existing)
        }
        let startSequence = runtime.restorer?.restoredWorkerStart(at: info.path, key: key) ?? runtime.currentSequence
        let idempotencyKey = runtime.idempotencyPrefix.map { "\($0)\(info.path)#\(key)@\(startSequence)" }
        let record = WorkerRecord(
            id: runtime.makeID(), key: key, worker: worker, origin: origin, startSequence: startSequence,
            idempotencyKey: idempotencyKey, outputMap: outputMap, node: self)
        nextWorkers[workerKey] = record
        workersByID[record.id] = record
        runtime.effects.workersToStart.append(record)
        runtime.declarationVersion &+= 1
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
