/// A node as observers see it.
public struct NodeInfo: Sendable, Hashable {
    /// The node's place in the tree.
    public let path: NodePath
    /// The workflow's type name.
    public var workflowType: String { path.segments.last?.workflowType ?? "" }
}

/// Why an action was not applied.
public enum DiscardReason: String, Sendable, Hashable {
    /// The node it was sent to has ended (it is no longer rendered, or the host stopped).
    case nodeEnded
    /// The node's latest render pass no longer declares a sink of the action's type.
    case actionTypeNotDeclared
    /// A worker emitted it, but a render pass ended that worker before it could be applied.
    case workerEnded
    /// The host has stopped.
    case hostStopped
    /// A durable host cannot log the action's type, or could not read it back after a restart
    /// (it is not a `DurableAction`, or its configuration's registry has no decoder for it). The
    /// node's state is unchanged and the host goes on; ``DiscardedAction/error`` says what to do.
    case notLoggable
    /// The host's instance has finished (see ``FinishingWorkflow``): it takes no more actions.
    case finished
}

/// An action that reached the runtime but was not applied.
public struct DiscardedAction: Sendable {
    /// The action's type name.
    public let actionType: String
    /// The node it was meant for, when still known.
    public let node: NodeInfo?
    /// Why it was not applied.
    public let reason: DiscardReason
    /// Where it came from.
    public let origin: ActionOrigin
    /// The error behind a ``DiscardReason/notLoggable`` discard (a `DurableError`).
    public let error: (any Error)?
}

/// An action about to be applied to a node, with the node's state before it.
public struct ActionEvent {
    /// The node the action is applied to.
    public let node: NodeInfo
    /// The action value.
    public let action: any WorkflowAction
    /// Where the action came from; `nil` for actions applied in an output cascade.
    public let origin: ActionOrigin?
    /// The node's state before the action.
    public let stateBefore: Any
}

/// Hooks into the runtime, for logging, metrics and tracing. Every hook has a no-op default and
/// is called synchronously on the thread running the host, in the order things happen.
/// "Will" hooks may return a closure that is called when the thing has finished.
public protocol WorkflowObserver: Sendable {
    /// A node was created (its initial state exists).
    func nodeDidStart(_ node: NodeInfo)
    /// A node ended: it was not rendered by its parent, or the host stopped.
    func nodeDidEnd(_ node: NodeInfo)
    /// An action is about to be applied; the returned closure gets the state after it and the output.
    func actionWillApply(_ event: ActionEvent) -> ((_ stateAfter: Any, _ output: Any?) -> Void)?
    /// An action was not applied (see ``DiscardReason``).
    func actionDiscarded(_ action: DiscardedAction)
    /// A render pass is about to start; the returned closure gets its duration.
    func renderPassWillStart() -> ((_ duration: Duration) -> Void)?
    /// A worker's task started.
    func workerDidStart(node: NodeInfo, workerType: String, key: String)
    /// A worker's task was cancelled because no render pass declares it any more.
    func workerDidEnd(node: NodeInfo, workerType: String, key: String)
}

extension WorkflowObserver {
    public func nodeDidStart(_ node: NodeInfo) {}
    public func nodeDidEnd(_ node: NodeInfo) {}
    public func actionWillApply(_ event: ActionEvent) -> ((_ stateAfter: Any, _ output: Any?) -> Void)? { nil }
    public func actionDiscarded(_ action: DiscardedAction) {}
    public func renderPassWillStart() -> ((_ duration: Duration) -> Void)? { nil }
    public func workerDidStart(node: NodeInfo, workerType: String, key: String) {}
    public func workerDidEnd(node: NodeInfo, workerType: String, key: String) {}
}
