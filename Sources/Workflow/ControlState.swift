/// What the control plane (rule O2) has done to an instance's tree, as its log says: whether it
/// is paused, whether a cancel request is being handled, and the last control request applied.
/// A durable host keeps it with every snapshot and rebuilds it by replay, as it does node states.
package struct ControlState: Sendable, Hashable {
    /// Paused: the host applies no action and fires no timer; what arrives waits, in order.
    package var paused = false
    /// The cancel request the workflow is handling (cancellation in progress), if any.
    package var cancellation: CancellationRequest?
    /// The number of the last control request applied to the instance (requests are numbered
    /// per instance, from 1, in the order they were made): a request at or below it was applied.
    package var lastRequest: UInt64 = 0

    package init(paused: Bool = false, cancellation: CancellationRequest? = nil, lastRequest: UInt64 = 0) {
        self.paused = paused
        self.cancellation = cancellation
        self.lastRequest = lastRequest
    }

    /// Whether nothing was ever done to the instance (snapshots then leave the state out).
    package var isInitial: Bool { self == ControlState() }
}

/// How a host's instance ends by a control request, not by its workflow's decision.
public enum InstanceEnding: Sendable, Hashable, CustomStringConvertible {
    /// Cancelled at once (its root handles no cancel request), at its cancel request's deadline,
    /// or by a tool while no host ran it.
    case cancelled(reason: String?)
    /// Terminated by an operator: ended at once, its workflows told nothing.
    case terminated(reason: String?)
    /// Deleted by an operator while its host ran it.
    case deleted

    public var description: String {
        switch self {
        case .cancelled(let reason): "cancelled" + (reason.map { ": \($0)" } ?? "")
        case .terminated(let reason): "terminated" + (reason.map { ": \($0)" } ?? "")
        case .deleted: "deleted"
        }
    }
}

/// A control request as the runtime applies it: a verb of the control plane, numbered per
/// instance (``ControlState/lastRequest``).
package struct ControlCommand: Sendable {
    package enum Verb: Sendable, Hashable {
        /// Hand the workflows a cancel request, ending by `deadline` (an offset from when the
        /// host applies it; `nil`: none).
        case cancel(deadline: Duration?)
        /// End the instance at once, as terminated.
        case terminate
        /// Apply nothing and fire no timer until unpaused.
        case pause
        case unpause
        /// Stop the host; the engine deletes the instance once it has.
        case delete
        /// The engine's own: the deadline of the cancel request being handled has passed.
        case endCancellation
    }

    package let verb: Verb
    /// The request's number within its instance (0: the engine's own, as a cancel's deadline).
    package let number: UInt64
    package let reason: String?
    /// A pause whose host has let the task attempts in flight report (the runtime's own).
    package var attemptsSettled = false

    package init(verb: Verb, number: UInt64, reason: String?) {
        self.verb = verb
        self.number = number
        self.reason = reason
    }
}

/// What a host made of a control command, for its requester.
package enum ControlOutcome: Sendable, Hashable {
    /// Applied as the log entry at `sequence` (committed).
    case applied(sequence: UInt64)
    /// Applied before (a request at or below the instance's last one): nothing was done again.
    case alreadyApplied
    /// Nothing to do: the instance is already as asked (paused, not paused, being cancelled).
    case unchanged(String)
    /// Not applied, and why (the instance is paused, it finished).
    case refused(String)
}

/// A control entry of the log, as replay hands it to the runtime (rule O2): the engine decodes
/// the entry's payload into this.
package enum ControlEntryEffect: Sendable, Hashable {
    /// A cancel request (`$cancel`).
    case cancel(CancellationRequest)
    /// The instance ended by a control request (`$terminate`).
    case end(InstanceEnding)
    case pause
    case unpause
}
