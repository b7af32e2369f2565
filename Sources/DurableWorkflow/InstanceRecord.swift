import Workflow
import WorkflowStorage

/// An instance as listed by the store's index (updated in the same transaction as its log).
public struct InstanceInfo: Sendable, Hashable, Codable {
    /// The id it was started with.
    public let id: String
    /// The root workflow's type name.
    public let workflowType: String
    /// Its status.
    public let status: InstanceStatus
    /// When it was started.
    public let created: WallTime
    /// When its log last grew (or its status changed).
    public let updated: WallTime
    /// The sequence of its last log entry.
    public let lastSequence: UInt64
    /// The sequence of its latest snapshot (0 when none).
    public let lastSnapshot: UInt64
    /// The code version it started under (``DurableConfiguration/codeVersion``; `nil`: none).
    public let codeVersion: String?
    /// Why it is failed: the kind of the error that stopped its replay, a colon, and the error
    /// (`nil` unless `failed`).
    public let failure: String?
}

extension StoredInstance {
    /// The instance as ``WorkflowStore`` lists it.
    var info: InstanceInfo {
        InstanceInfo(id: id, workflowType: workflowType, status: status, created: WallTime(nanosecondsSinceEpoch: created),
                     updated: WallTime(nanosecondsSinceEpoch: updated), lastSequence: lastSequence, lastSnapshot: lastSnapshot,
                     codeVersion: codeVersion, failure: failure)
    }
}
