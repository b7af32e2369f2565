/// How a durable engine plugs into the runtime (package-internal: users never implement it).
///
/// Every method is called on the thread running the host, in the order things happen:
/// `record` right after an originating action (or props update) is applied and before its render
/// pass; `renderPassDidFinish` after that pass; `commitPending` when the queue runs empty or a
/// flush is asked for. Effects of everything recorded (renderings, outputs, workers, side effects,
/// `sendAndWait` completions) are released only once a call returns `true`: committed (D2).
/// A thrown error stops the host: nothing uncommitted is released, the log stays the truth.
package protocol RuntimeJournal: AnyObject {
    /// Records an action applied to the node at `path`; `attachment` (from a worker output that
    /// is ``JournalAttachable``) must be committed in the same transaction as the entry.
    func record(
        action: any WorkflowAction, at path: NodePath, origin: ActionOrigin, time: WallTime, attachment: (any Sendable)?,
        tree: any RuntimeTree
    ) throws
    /// Records new root props.
    func record(props: any Sendable, time: WallTime, tree: any RuntimeTree) throws
    /// The render pass for the last recorded entry finished; returns whether everything recorded
    /// so far is committed.
    func renderPassDidFinish(tree: any RuntimeTree) throws -> Bool
    /// The queue ran empty (`force == false`) or someone waits for the commit (`force == true`).
    /// Commits whatever is pending and returns `true`, or (not forced) defers: returns `false`
    /// and arranges for `commitLater` to be called once the commit should happen.
    func commitPending(force: Bool, commitLater: @escaping @Sendable () -> Void) throws -> Bool
    /// The host stopped (or failed): release whatever the journal holds for it.
    func hostDidStop()
    /// The sequence of the latest recorded entry (0 before the first).
    var currentSequence: UInt64 { get }
    /// The instance's id, for worker idempotency keys.
    var instanceID: String { get }
}

/// Receives live nodes' states with their static types (no boxing into `Any`).
package protocol NodeStateVisitor {
    /// Called once per live node, in order of `pathDescription` (`path.description`).
    mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws
}

/// Reads node states during a journal callback (snapshots, digests).
package protocol RuntimeTree {
    /// Every live node's path and state, ordered by path description.
    func nodeStates() -> [(path: NodePath, state: Any)]
    /// Hands every live node's state to `visitor`, ordered by path description.
    func visitNodeStates<Visitor: NodeStateVisitor>(_ visitor: inout Visitor) throws
    /// Every declared worker's node path, key and start sequence.
    func workerStarts() -> [(path: NodePath, key: String, sequence: UInt64)]
    /// The root workflow value (the props it was last given).
    func rootWorkflow() -> Any
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
    var tree: any RuntimeTree { get }
}

/// Set for the task of a worker: the key stays the same when a worker that was running at a
/// crash is started again after replay, so it can be passed to external systems as an
/// idempotency key.
public enum WorkerContext {
    /// `<instance><node path>#<worker key>@<start sequence>` (e.g. `order-7/Order/Upload[a]#upload@12`)
    /// for a durable host; `nil` in memory.
    @TaskLocal public static var idempotencyKey: String?
}

/// A worker output that carries something the journal must commit together with the action the
/// output becomes (a signal's delivery mark, so that delivery and action commit atomically).
package protocol JournalAttachable: Sendable {
    var journalAttachment: any Sendable { get }
}
