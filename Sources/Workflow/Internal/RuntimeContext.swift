import Synchronization
import WorkflowMemory

/// The source of `RuntimeContext.structureVersion`: process-wide, so no two trees share a version
/// (a digest cache keyed by it cannot mistake one tree for another).
private let structureVersions = Atomic<UInt64>(0)

/// The state a host's nodes share, touched only by the thread currently running the host
/// (the single drainer of its queue), so it needs no lock of its own.
final class RuntimeContext: RuntimeTree {
    /// The host's queue (set once, right after both are made).
    var queue: any ActionQueue { queueRef.unsafelyUnwrapped }
    // Owner: the queue (the runtime) holds this context; nodes reach it only while the runtime drains.
    private unowned(unsafe) var queueRef: (any ActionQueue)?
    let observers: [any WorkflowObserver]
    let programmerErrors: ProgrammerErrorPolicy
    let clock: any WorkflowClock

    // Not checked dynamically for exclusivity: drainer-only, never accessed re-entrantly.
    @exclusivity(unchecked) var nodes: [NodeID: any AnyWorkflowNode] = [:]
    @exclusivity(unchecked) private(set) var nodesByPath: [NodePath: any AnyWorkflowNode] = [:]
    /// The live nodes ordered by path description (digests visit them on every entry), made when
    /// first needed after a node starts or ends.
    @exclusivity(unchecked) private var orderedNodes: [any AnyWorkflowNode]?
    /// Taken from `structureVersions` whenever a node starts or ends.
    @exclusivity(unchecked) private(set) var structureVersion = structureVersions.add(1, ordering: .relaxed).newValue
    /// Counts the workers that started being declared or stopped.
    @exclusivity(unchecked) var declarationVersion: UInt64 = 0
    @exclusivity(unchecked) var effects = EffectBatch()
    /// The node whose render is running, for the "sent during render" message.
    @exclusivity(unchecked) var renderingNode: NodeID = 0
    /// The time stamped on the action being applied (logged, and replayed as logged).
    @exclusivity(unchecked) var currentTime = WallTime(nanosecondsSinceEpoch: 0)
    /// The log sequence of the entry whose render pass is running (durable hosts).
    @exclusivity(unchecked) var currentSequence: UInt64 = 0
    /// What a durable instance's worker idempotency keys begin with (its id, and its incarnation).
    @exclusivity(unchecked) var idempotencyPrefix: String?
    /// How the tree's node paths name workflow types.
    var pathNaming = NodePath.Naming.readable
    /// Replay applies logged entries: nothing is recorded, no output is kept.
    @exclusivity(unchecked) var isReplaying = false
    /// The sequence of the entry replay is applying (root outputs are numbered by it).
    var replayingSequence: UInt64 = 0
    /// The sequence up to which root outputs are acknowledged (as logged).
    var acknowledgedThrough: UInt64 = 0
    /// The sequence of the latest entry that emitted a root output (acknowledged outputs only).
    var lastOutputSequence: UInt64 = 0
    /// What control requests did to the tree (rule O2), as logged.
    var control = ControlState()
    /// The control state, for snapshots.
    var controlState: ControlState { control }
    /// States recorded by a snapshot, for the nodes a resume creates.
    @exclusivity(unchecked) var restorer: (any StateRestorer)?
    /// The versions the tree's code takes (`nil`: no marker declared, no code version).
    @exclusivity(unchecked) var versions: InstanceVersions?
    /// Whether applied actions are kept (`setLastApplied`; a durable host's journal reads them).
    @exclusivity(unchecked) var recordsActions = false
    /// The originating action just applied, for the journal (in `appliedSlot` while
    /// `hasLastApplied`); its node's path and its origin are in `lastAppliedPath` and
    /// `lastAppliedOrigin`. Separate fields, not an optional tuple or even an optional: assigning
    /// an optional existential went through runtime value witnesses (to destroy the old value),
    /// where initializing the slot moves the existential's words.
    private let appliedSlot = ValueSlot<any WorkflowAction>()
    @exclusivity(unchecked) private var hasLastApplied = false
    /// Optional so that the journal's call can take it (a copy out of this object retained both
    /// of its references around the call).
    @exclusivity(unchecked) var lastAppliedPath: NodePath?
    @exclusivity(unchecked) var lastAppliedOrigin = ActionOrigin.sink
    /// What the worker output being applied asks the journal to commit with it (none or one; an
    /// array because checking an empty one copies nothing, unlike an optional existential).
    @exclusivity(unchecked) var pendingAttachments: [any Sendable] = []
    @exclusivity(unchecked) private var nextID: UInt64 = 1
    // The last answer of `node(at:)`, kept apart (not as an optional tuple) so that checking it
    // copies nothing: a copy of the path and node is three reference-count operations.
    @exclusivity(unchecked) private var lastLookupPath = NodePath(segments: [])
    @exclusivity(unchecked) private var lastLookupNode: (any AnyWorkflowNode)?
    /// The last answer of `node(id:)`, forgotten when that node ends.
    @exclusivity(unchecked) private var lastIDNode: (any AnyWorkflowNode)?
    /// Services from the host configuration.
    @exclusivity(unchecked) var dependencies: [ObjectIdentifier: any Sendable] = [:]
    /// Asked before a durable host applies the first action of a type: `nil` when the journal
    /// can log actions of that type and read them back after a restart, else why not.
    var admission: ((any WorkflowAction.Type) -> (any Error)?)?
    private var admittedTypes: Set<ObjectIdentifier> = []
    private var lastAdmitted: ObjectIdentifier?
    /// Why the last action `admits` refused was refused.
    var lastRefusal: (any Error)?
    /// Told of every discarded action besides the observers (a durable host's journal, which
    /// logs those that lose work through the engine's logger).
    var discardReporter: ((DiscardedAction) -> Void)?

    /// A context whose `queue` is given by ``attach(queue:)`` before any node is made (the queue
    /// needs the context first).
    init(observers: [any WorkflowObserver], programmerErrors: ProgrammerErrorPolicy, clock: any WorkflowClock) {
        self.observers = observers
        self.programmerErrors = programmerErrors
        self.clock = clock
    }

    func attach(queue: any ActionQueue) {
        queueRef = queue
    }

    deinit {
        discardLastApplied()
    }

    /// Keeps `action` as the originating action just applied.
    func setLastApplied(_ action: consuming any WorkflowAction) {
        if hasLastApplied { appliedSlot.deinitialize() }
        appliedSlot.initialize(to: action)
        hasLastApplied = true
    }

    /// The originating action just applied, moved out.
    func takeLastApplied() -> (any WorkflowAction)? {
        guard hasLastApplied else { return nil }
        hasLastApplied = false
        return appliedSlot.move()
    }

    /// Whether an originating action of type `Action` may be applied: always in memory and during
    /// replay; on a durable host, only if its journal can log it (else `lastRefusal` says why).
    /// The node's state must not change for an action its journal cannot log, so this is asked
    /// before the action is applied.
    @inline(__always)
    func admits<Action: WorkflowAction>(_ type: Action.Type) -> Bool {
        guard recordsActions, !isReplaying else { return true }
        let id = ObjectIdentifier(type)
        if id == lastAdmitted { return true }
        return admitsOther(type, id: id)
    }

    @inline(never)
    private func admitsOther(_ type: any WorkflowAction.Type, id: ObjectIdentifier) -> Bool {
        if !admittedTypes.contains(id) {
            // A refused type is asked again next time: refusals are rare, and stay explained.
            if let refusal = admission?(type) {
                lastRefusal = refusal
                return false
            }
            admittedTypes.insert(id)
        }
        lastAdmitted = id
        return true
    }

    func discardLastApplied() {
        if hasLastApplied { appliedSlot.deinitialize() }
        hasLastApplied = false
        lastAppliedPath = nil
    }

    /// The type of the workflow whose render is running.
    var renderingWorkflow: String { nodes[renderingNode]?.info.workflowType ?? "an unknown workflow" }

    func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    func register(_ node: any AnyWorkflowNode) {
        nodes[node.id] = node
        nodesByPath[node.info.path] = node
        orderedNodes = nil
        structureVersion = structureVersions.add(1, ordering: .relaxed).newValue
        for observer in observers { observer.nodeDidStart(node.info) }
    }

    /// The live node with `id`; sends come to the same node in a row, so the last answer is kept
    /// (hashing the id costs more than the rest of finding the node).
    func node(id: NodeID) -> (any AnyWorkflowNode)? {
        if let lastIDNode, lastIDNode.id == id { return lastIDNode }
        lastIDNode = nodes[id]
        return lastIDNode
    }

    /// The live node at `path`; replay asks for the same path entry after entry, so the last
    /// answer is kept (and forgotten when that node ends).
    func node(at path: NodePath) -> (any AnyWorkflowNode)? {
        if lastLookupNode != nil, lastLookupPath == path { return lastLookupNode }
        guard let node = nodesByPath[path] else { return nil }
        lastLookupPath = path
        lastLookupNode = node
        return node
    }

    func unregister(_ node: any AnyWorkflowNode) {
        if lastLookupNode?.id == node.id { lastLookupNode = nil }
        if lastIDNode?.id == node.id { lastIDNode = nil }
        nodes[node.id] = nil
        nodesByPath[node.info.path] = nil
        orderedNodes = nil
        structureVersion = structureVersions.add(1, ordering: .relaxed).newValue
        for observer in observers { observer.nodeDidEnd(node.info) }
    }

    func discarded(_ description: String, node: NodeInfo?, reason: DiscardReason, origin: ActionOrigin, error: (any Error)? = nil) {
        let discard = DiscardedAction(actionType: description, node: node, reason: reason, origin: origin, error: error)
        for observer in observers { observer.actionDiscarded(discard) }
        discardReporter?(discard)
    }

    // MARK: RuntimeTree

    func nodeStates() -> [(path: NodePath, state: Any)] {
        nodesInPathOrder().map { ($0.info.path, $0.anyState) }
    }

    func visitNodeStates<Visitor: NodeStateVisitor>(_ visitor: inout Visitor) throws {
        for node in nodesInPathOrder() {
            try node.visitState(&visitor)
        }
    }

    func nodeStateCells() -> [(path: String, cell: NodeStateCell)] {
        nodesInPathOrder().map { ($0.pathDescription, $0.stateCell) }
    }

    private func nodesInPathOrder() -> [any AnyWorkflowNode] {
        if let orderedNodes { return orderedNodes }
        let ordered = nodesByPath.values.sorted { $0.pathDescription < $1.pathDescription }
        orderedNodes = ordered
        return ordered
    }

    func rootWorkflow() -> Any {
        nodesByPath.values.min { $0.info.path.segments.count < $1.info.path.segments.count }!.anyWorkflow
    }

    func declaredWorkers() -> [DeclaredWorker] {
        nodesByPath.values.flatMap(\.declaredWorkers).sorted { ($0.path.description, $0.key) < ($1.path.description, $1.key) }
    }

    func workerStarts() -> [(path: NodePath, key: String, sequence: UInt64)] {
        nodesByPath.values.flatMap { node in node.workerStarts.map { (node.info.path, $0.key, $0.sequence) } }
            .sorted { ($0.path.description, $0.key) < ($1.path.description, $1.key) }
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
    /// `hostStopped`: the batch ends the whole tree because the host is stopping.
    mutating func release(queue: any ActionQueue, observers: [any WorkflowObserver], hostStopped: Bool = false) {
        if isEmpty { return }
        let stopping = workersToStop, starting = workersToStart
        let ending = lifetimesToEnd, sideEffects = sideEffectsToStart
        self = EffectBatch()
        for worker in stopping { worker.stop(observers: observers, hostStopped: hostStopped) }
        for lifetime in ending { lifetime.end() }
        for (lifetime, action) in sideEffects where !lifetime.hasEnded { action(lifetime) }
        for worker in starting where !worker.hasEnded { worker.start(queue: queue, observers: observers) }
    }
}
