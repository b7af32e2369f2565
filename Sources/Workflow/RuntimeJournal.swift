import WorkflowMemory

/// How a durable engine plugs into the runtime (package-internal: users never implement it).
///
/// Every method is called on the thread running the host, in the order things happen:
/// `record` right after an originating action (or props update) is applied and before its render
/// pass; `renderPassDidFinish` after that pass; `commitPending` when the queue runs empty, someone
/// waits, or the host stops. Effects of everything recorded (renderings, outputs, workers, side
/// effects, `sendAndWait` completions) are released only once the journal says they are
/// committed (D2): at once (`.committed`), or later through the listener (`.committing`).
/// A thrown error stops the host: nothing uncommitted is released, the log stays the truth.
package protocol RuntimeJournal: AnyObject {
    /// `nil` if actions of `type` can be logged and read back after a restart, else why not
    /// (asked before the first action of a type is applied; a refused action is not applied).
    func admit(_ type: any WorkflowAction.Type) -> (any Error)?
    /// Records an action applied to the node at `path`.
    func record(action: any WorkflowAction, at path: NodePath, origin: ActionOrigin, time: WallTime) throws
    /// `attachment` (from a worker output that is ``JournalAttachable``) must be committed in the
    /// same transaction as the entry recorded last. (Apart from `record`: passing an optional
    /// existential that is almost always `nil` cost a copy and a destroy through value witnesses.)
    func attach(_ attachment: any Sendable)
    /// The entry recorded last finished the instance (its root emitted its final output): its
    /// commit also marks the instance completed, or cancelled when it came after a cancel request
    /// (`asCancelled`).
    func finish(asCancelled: Bool)
    /// Records a control entry (rule O2) at the root at `path`, for control request `number` (0:
    /// the engine's own, a cancel's deadline): a cancel request (`$cancel`), the instance's end
    /// (`$terminate`, whose commit sets its status), a pause or an unpause (which set it too, and
    /// keep the request's `reason`).
    func record(control effect: ControlEntryEffect, number: UInt64, reason: String?, at path: NodePath, time: WallTime) throws
    /// Tells the requester of control request `number` what became of it (after the commit of
    /// an entry it made).
    func answer(control number: UInt64, outcome: ControlOutcome)
    /// From now on, until the host stops, the control requests for the instance reach the host
    /// through `receiver` (which the journal does not keep alive).
    func accept(controls receiver: any ControlReceiver)
    /// The host stops for delete request `number`: the journal deletes the instance as it lets go
    /// of it (``hostDidStop()``), and answers.
    func deleteOnStop(request number: UInt64)
    /// Records that the consumer of root outputs has handled those of the entries up to `sequence`.
    func record(acknowledgement sequence: UInt64, time: WallTime) throws
    /// Records new root props.
    func record(props: any Sendable, time: WallTime, tree: any RuntimeTree) throws
    /// The render pass for the last recorded entry finished. `awaited`: the entry's action came
    /// through `sendAndWait`, whose caller waits for the commit without holding a thread (the
    /// journal may answer `.held` and commit when ``commitPending(_:listener:)`` asks `.now`).
    func renderPassDidFinish(tree: any RuntimeTree, listener: any JournalListener, awaited: Bool) throws -> CommitProgress
    /// Asks for a commit of everything recorded: when the mode says it is due (`.whenDue`: it may
    /// answer `.held` and call ``JournalListener/journalWantsCommit()`` later), started now
    /// (`.now`), or finished before returning (`.wait`, which answers `.committed`).
    func commitPending(_ urgency: CommitUrgency, listener: any JournalListener) throws -> CommitProgress
    /// The host stopped (or failed): release whatever the journal holds for it.
    func hostDidStop()
    /// The host failed with `error` (called before ``hostDidStop()``): an error the journal made
    /// itself (``unloggableWorker(_:workerType:key:node:refusal:)``) marks the instance failed.
    func hostDidFail(_ error: any Error)
    /// The error that stops a host whose render declared a worker (a task, a signal wait) whose
    /// outputs become actions of `action`, which the journal cannot log (rule O4): its outputs
    /// would all be discarded, and the workflow would wait forever. `refusal` is why the type
    /// was not admitted.
    func unloggableWorker(_ action: any WorkflowAction.Type, workerType: String, key: String, node: NodePath, refusal: (any Error)?)
        -> any Error
    /// An action reached the host and was not applied (rare): the journal logs those that lose work.
    func discarded(_ discard: DiscardedAction)
    /// The sequence of the latest recorded entry (0 before the first).
    var currentSequence: UInt64 { get }
    /// What worker idempotency keys begin with: the instance's id, and for an instance started
    /// since issue 59 its incarnation (`order-7~k3j9x1`), so that an id deleted and started again
    /// gets keys of its own.
    var idempotencyPrefix: String { get }
    /// How the instance's node paths name workflow types, fixed when it started.
    var pathNaming: NodePath.Naming { get }
}

/// Where everything recorded so far stands, as a journal answers the runtime.
package enum CommitProgress: Sendable {
    /// Committed: release it all now.
    case committed
    /// Not committed and not being committed yet: hold it.
    case held
    /// Everything recorded up to ``RuntimeJournal/currentSequence`` is being committed in the
    /// background: hold it until ``JournalListener/journalDidCommit(through:)`` reaches it.
    case committing
}

/// How soon a commit asked of the journal must happen.
package enum CommitUrgency: Sendable {
    /// When the durability mode says (a group commit may wait for more entries).
    case whenDue
    /// Started now (someone waits for it), possibly finishing in the background.
    case now
    /// Finished before the call returns (the host is stopping).
    case wait
}

/// What a journal tells the runtime from outside its calls (any thread).
package protocol JournalListener: AnyObject, Sendable {
    /// Every entry up to `sequence` is committed. `onCommitter`: the call comes from a thread that
    /// only commits (a background committer of the store's commits, not a host's thread), which
    /// may then release what the commit held back itself, when doing so runs nothing of the host's.
    func journalDidCommit(through sequence: UInt64, onCommitter: Bool)
    /// A background commit failed: the host must stop without releasing anything uncommitted.
    func journalDidFail(_ error: any Error)
    /// A commit the journal held back (``CommitProgress/held``) is now due.
    func journalWantsCommit()
}

/// Receives live nodes' states with their static types (no boxing into `Any`).
package protocol NodeStateVisitor {
    /// Called once per live node, in order of `pathDescription` (`path.description`).
    mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws
}

/// Reads node states during a journal callback (snapshots, digests).
package protocol RuntimeTree: AnyObject {
    /// Every live node's path and state, ordered by path description.
    func nodeStates() -> [(path: NodePath, state: Any)]
    /// Hands every live node's state to `visitor`, ordered by path description.
    func visitNodeStates<Visitor: NodeStateVisitor>(_ visitor: inout Visitor) throws
    /// Changes whenever a node starts or ends; never the same for two trees of a process.
    var structureVersion: UInt64 { get }
    /// Every live node's path description and state cell, ordered by path description. Each cell
    /// stays valid, and keeps showing the node's current state, as long as `structureVersion`
    /// does not change.
    func nodeStateCells() -> [(path: String, cell: NodeStateCell)]
    /// Every declared worker's node path, key and start sequence.
    func workerStarts() -> [(path: NodePath, key: String, sequence: UInt64)]
    /// Every declared worker, with what it waits for, in path and key order.
    func declaredWorkers() -> [DeclaredWorker]
    /// Changes whenever a worker starts being declared or stops.
    var declarationVersion: UInt64 { get }
    /// The root workflow value (the props it was last given).
    func rootWorkflow() -> Any
    /// The sequence up to which the consumer has acknowledged root outputs (as logged).
    var acknowledgedThrough: UInt64 { get }
    /// The sequence of the latest entry whose action emitted a root output (kept only for hosts
    /// whose outputs wait for acknowledgements; 0 otherwise).
    var lastOutputSequence: UInt64 { get }
    /// What control requests did to the tree (paused, a cancellation, the last request applied).
    var controlState: ControlState { get }
}

/// Gives nodes created during a resume the states a snapshot recorded.
package protocol StateRestorer: AnyObject {
    /// The state recorded for the node at `path`, or `nil` to start from `makeInitialState()`.
    func restoredState<State>(at path: NodePath, as type: State.Type) -> State?
    /// The sequence at which the worker under `key` of the node at `path` first started.
    func restoredWorkerStart(at path: NodePath, key: String) -> UInt64?
}

/// Why a logged entry could not be replayed onto the tree.
package enum ReplayMismatch: Error, Equatable {
    /// No live node has the entry's path.
    case noNode(NodePath)
    /// The node at the path is not of the action's workflow type.
    case wrongWorkflowType(NodePath, expected: String)
    /// The props entry does not hold the root's workflow type.
    case wrongPropsType(String)
}

/// Drives a replay: applies logged entries to the tree with their logged times, one render pass
/// each, without releasing any effect.
package protocol ReplayDriver {
    func apply<Action: WorkflowAction>(
        _ action: Action, at path: NodePath, origin: ActionOrigin, time: WallTime, sequence: UInt64
    ) throws(ReplayMismatch)
    func updateRoot(props: any Sendable, time: WallTime, sequence: UInt64) throws(ReplayMismatch)
    /// The entry at `sequence` acknowledges root outputs up to `through`.
    func acknowledged(through: UInt64, sequence: UInt64)
    /// The entry at `sequence` is a control entry for request `number` (rule O2): it pauses,
    /// unpauses, hands the workflows a cancel request (with its render pass), or ends the instance.
    func control(_ effect: ControlEntryEffect, number: UInt64, time: WallTime, sequence: UInt64)
    /// The control state a snapshot recorded, before the entries after it are applied.
    func restoreControl(_ state: ControlState)
    var tree: any RuntimeTree { get }
}

/// Takes the control requests of a host's instance (the runtime), from any thread.
package protocol ControlReceiver: AnyObject, Sendable {
    func receive(_ command: ControlCommand)
}

/// Set for the task of a worker: the key stays the same when a worker that was running at a
/// crash is started again after replay, so it can be passed to external systems as an
/// idempotency key.
public enum WorkerContext {
    /// `<instance>~<incarnation><node path>#<worker key>@<start sequence>` (e.g.
    /// `order-7~k3j9x1/Order/Upload[a]#upload@12`) for a durable host (instances started before
    /// issue 59 keep their keys without the incarnation); `nil` in memory.
    @TaskLocal public static var idempotencyKey: String?
    /// The in-flight work of the worker's host, which a graceful stop drains.
    @TaskLocal package static var drainGate: DrainGate?
}

/// A worker output that carries something the journal must commit together with the action the
/// output becomes (a signal's delivery mark, so that delivery and action commit atomically).
package protocol JournalAttachable: Sendable {
    var journalAttachment: any Sendable { get }
}

/// A worker a tree declares, as inspection shows it.
package struct DeclaredWorker: Sendable {
    /// The declaring node.
    package let path: NodePath
    /// Its key in that node.
    package let key: String
    /// The sequence of the render pass that first declared it.
    package let sequence: UInt64
    /// How its outputs are logged.
    package let origin: ActionOrigin
    /// The worker's type name.
    package let workerType: String
    /// What it waits for, when the worker says.
    package let wait: WorkerWait?
}

/// What a worker waits for, for operators (``DescribedWorker``).
package enum WorkerWait: Sendable {
    /// A durable timer, due at `deadline`.
    case timer(deadline: WallTime)
    /// Versions of a signal (its id, as text).
    case signal(String)
    /// A task's next attempt, not before `notBefore` (after a failure).
    case task(attempt: Int, notBefore: WallTime?)
}

/// A worker that says what it waits for (timers, signal waits, tasks).
package protocol DescribedWorker {
    var wait: WorkerWait { get }
}
