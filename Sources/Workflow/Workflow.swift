/// A state machine in a tree of state machines, in the style of Square's Workflow.
///
/// The workflow value is its *props*: the input its parent (or the host) gives it. The runtime
/// owns its *state*, starting from ``makeInitialState()``, and advances it only by applying
/// ``WorkflowAction``s. Each render pass calls ``render(state:context:)``, which must be a pure,
/// idempotent function of props and state: it returns the *rendering*, declares child workflows,
/// sinks, workers and side effects through the context, and never changes state itself.
public protocol Workflow<Rendering, Output> {
    /// The private state the runtime keeps for each node of this workflow.
    associatedtype State
    /// What an action can hand to the parent (or the host); `Never` when nothing.
    associatedtype Output = Never
    /// The public result of a render pass.
    associatedtype Rendering

    /// The state of a node that has just been created.
    func makeInitialState() -> State

    /// Called when the parent renders this node with new props, before the render pass that
    /// follows; adjust `state` to them here. The default does nothing.
    func workflowDidChange(from previousWorkflow: Self, state: inout State)

    /// Builds the rendering from props and state; must not change anything.
    func render(state: State, context: RenderContext<Self>) -> Rendering

    /// The name this workflow type goes by in node paths, and so in durable logs, snapshots and
    /// stores, for the life of every instance (default: the module-qualified type name, as
    /// `String(reflecting:)` gives it). Declare it to keep running instances when you rename the
    /// type or move it to another module.
    static var workflowName: String { get }
}

extension Workflow {
    public static var workflowName: String { String(reflecting: Self.self) }

    public func workflowDidChange(from previousWorkflow: Self, state: inout State) {}
}

extension Workflow where State == Void {
    public func makeInitialState() -> State { () }
}

/// A root workflow that finishes by its own decision: the first root output for which
/// ``isFinal(_:)`` is true is the instance's result. The action that emitted it is its last:
/// a durable host commits the instance's `completed` status with that action's entry, so the
/// outcome comes from the log and survives crashes. The host then delivers the output (on
/// ``WorkflowHost/outputs`` and ``WorkflowHost/completion``), takes no more actions
/// (``DiscardReason/finished``) and stops.
public protocol FinishingWorkflow<Rendering, Output>: Workflow {
    /// Whether `output`, emitted by this root, finishes the instance (default: every output does).
    func isFinal(_ output: Output) -> Bool
}

extension FinishingWorkflow {
    public func isFinal(_ output: Output) -> Bool { true }
}
