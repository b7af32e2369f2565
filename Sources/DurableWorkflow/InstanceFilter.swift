import Workflow
import WorkflowStorage

/// Which instances a listing keeps (``WorkflowStore/instances(matching:after:limit:examiningAtMost:)``):
/// every condition that is set must hold.
public struct InstanceFilter: Sendable, Hashable {
    /// Only instances with this status.
    public var status: InstanceStatus?
    /// Only instances whose root workflow type has this name, with or without its module.
    public var workflowType: String?
    /// Only instances started under this code version; `.some(nil)`: those started under none.
    public var codeVersion: String??
    /// Only failed instances whose failure is of this kind (the text before the colon of
    /// ``InstanceInfo/failure``, e.g. `undecodablePayload`).
    public var failedWith: String?
    /// Only instances whose log grew (or status changed) at or after this time.
    public var updatedSince: WallTime?

    /// Every instance; set the conditions wanted.
    public init(
        status: InstanceStatus? = nil, workflowType: String? = nil, codeVersion: String?? = nil, failedWith: String? = nil,
        updatedSince: WallTime? = nil
    ) {
        self.status = status
        self.workflowType = workflowType
        self.codeVersion = codeVersion
        self.failedWith = failedWith
        self.updatedSince = updatedSince
    }

    /// Whether no condition is set: every instance matches.
    public var isEmpty: Bool {
        status == nil && workflowType == nil && codeVersion == nil && failedWith == nil && updatedSince == nil
    }

    /// Whether `instance` meets every condition set.
    public func matches(_ instance: InstanceInfo) -> Bool {
        if let status, instance.status != status { return false }
        if let workflowType, instance.workflowType != workflowType, !instance.workflowType.hasSuffix(".\(workflowType)") { return false }
        if let codeVersion, instance.codeVersion != codeVersion { return false }
        if let failedWith {
            guard let failure = instance.failure, failure.prefix { $0 != ":" } == failedWith else { return false }
        }
        if let updatedSince, instance.updated < updatedSince { return false }
        return true
    }
}

public typealias InstanceSummary = WorkflowStorage.InstanceSummary

/// A page of a listing: the instances found, and where the next page starts.
public struct InstancePage: Sendable, Hashable, Codable {
    /// The instances that matched, in id order (byte order of their UTF-8).
    public let instances: [InstanceInfo]
    /// The id to pass as `after` for the next page (which may turn out empty); `nil` when the
    /// listing has ended.
    public let next: String?
    /// How many instances were read to find these (matching or not).
    public let examined: Int

    public init(instances: [InstanceInfo], next: String?, examined: Int) {
        self.instances = instances
        self.next = next
        self.examined = examined
    }
}
