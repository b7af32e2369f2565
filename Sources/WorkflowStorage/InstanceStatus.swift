/// Where an instance is in its life.
public enum InstanceStatus: String, Sendable, Codable, CaseIterable {
    /// Started and not completed: it can be resumed.
    case running
    /// Marked complete by the application; its log is kept until deleted.
    case completed
    /// Replay stopped with an error (unknown action, corrupt entry, divergence); the log is intact.
    case failed
    /// Ended by an operator (`wfctl cancel`, `WorkflowStore.cancel(id:)`): never resumed; its log is kept.
    case cancelled
}
