/// A request to cancel a running instance (rule O2), as its workflows see it: an operator's
/// `wfctl cancel`, or `WorkflowStore.cancel(id:reason:deadline:)` from a service.
///
/// A durable host logs the request as an entry of the instance's log before any workflow sees it,
/// so replay hands the same request to the same workflows at the same point.
public struct CancellationRequest: Sendable, Hashable, Codable {
    /// Why it was asked for, as the requester said (`nil`: no reason given).
    public var reason: String?
    /// When the owning host applied it (the entry's time).
    public var requestedAt: WallTime
    /// When the engine ends the instance as cancelled if its workflow has not finished by then
    /// (`nil`: only the workflow's own decision ends it).
    public var deadline: WallTime?

    public init(reason: String? = nil, requestedAt: WallTime, deadline: WallTime? = nil) {
        self.reason = reason
        self.requestedAt = requestedAt
        self.deadline = deadline
    }
}

/// A workflow that handles a cancel request itself (rule O2): it changes its state to clean up
/// (what `render` then declares runs: a refund task, a release of a reservation), and a
/// ``FinishingWorkflow`` root ends the instance, as `cancelled`, with its next final output.
///
/// A root that is not a `CancellableWorkflow` ends at once when a cancel request reaches it (its
/// workers are cancelled, its status becomes `cancelled`). A request that is not finished by its
/// deadline ends the instance the same way.
///
/// ```swift
/// extension Booking: CancellableWorkflow {
///     func cancellationRequested(_ request: CancellationRequest, state: inout State) -> Output? {
///         if state.reservation == nil { return .cancelled }   // nothing to undo: finished now
///         state.phase = .releasing                           // render declares the release task
///         return nil
///     }
/// }
/// ```
public protocol CancellableWorkflow: Workflow {
    /// A cancel request reached this node: change `state` to clean up, and return an output for
    /// the parent (at the root, a final output ends the instance), or `nil`. Called once per
    /// request, during the apply of the request's entry (live, and again in replay), before the
    /// render pass that follows it. Use `request.requestedAt` (never the system clock) for
    /// anything the state remembers.
    func cancellationRequested(_ request: CancellationRequest, state: inout State) -> Output?

    /// What the request does to this node's children (default ``ChildCancellation/propagate``).
    var childCancellation: ChildCancellation { get }
}

extension CancellableWorkflow {
    public var childCancellation: ChildCancellation { .propagate }
}

/// Which children of a ``CancellableWorkflow`` node a cancel request reaches.
public enum ChildCancellation: Sendable, Hashable {
    /// Every child that is a ``CancellableWorkflow`` gets the request too, after its parent,
    /// and passes it on to its own children as its policy says. A child that is not cancellable
    /// is left to its parent, which ends it by no longer rendering it.
    case propagate
    /// The children get nothing: the node decides their fate by what it renders.
    case none
}
