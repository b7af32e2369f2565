import Tracing
import Workflow
import WorkflowStorage

/// An action that can be written to the log and read back: a `Codable` `WorkflowAction` with a
/// stable type tag and a version.
///
/// The tag names the action in the log forever: keep it when you rename or move the type. Bump
/// `version` when the encoded form changes, and register a decoder for the old version with
/// ``ActionRegistry/register(_:version:decode:)``.
public protocol DurableAction: WorkflowAction, Codable {
    /// The stable name of this action type in the log (default: the module-qualified type name).
    static var tag: String { get }
    /// The version of the encoded form (default 1).
    static var version: Int { get }
}

extension DurableAction {
    public static var tag: String { String(reflecting: Self.self) }
    public static var version: Int { 1 }
}

/// A root workflow whose instances live in a ``WorkflowStore``: its props are logged, so they
/// must be `Codable`. Node states must be `Codable` too (snapshots, digests, time travel).
public typealias DurableWorkflow = Workflow & Codable & Sendable

/// What must commit with the log entry of the action it came with (package-internal: the signal
/// subsystem's delivery marks), as data the backend applies in the same commit.
package protocol CommitAttachment: Sendable {
    /// The delivery mark to commit.
    var deliveryMark: DeliveryMarkRecord { get }
    /// The span of the delivery, linked from the span of the action it became.
    var spanContext: ServiceContext? { get }
    /// The commit succeeded.
    func didCommit()
    /// The host stopped before the commit: the writes were not made.
    func didAbandon()
}
