/// Where an instance is in its life.
public enum InstanceStatus: String, Sendable, Codable, CaseIterable {
    /// Started and not ended: it can be resumed.
    case running
    /// Finished by its workflow's own decision; its log is kept until deleted.
    case completed
    /// Replay stopped with an error (unknown action, corrupt entry, divergence), or its render
    /// declared work its configuration cannot log; the log is intact.
    case failed
    /// Ended by a cancel request (rule O2): by its workflow's decision after the request, at the
    /// request's deadline, at once (a root that handles none, or no host ran it). Never resumed;
    /// its log is kept.
    case cancelled
    /// Paused by an operator (rule O2): it applies no action and fires no timer until unpaused. A
    /// host that holds it keeps what arrives, in order; a service does not resume it.
    case paused
    /// Ended at once by an operator (`wfctl terminate`): never resumed; its log is kept.
    case terminated

    /// Whether the instance has ended for good (completed, cancelled or terminated).
    public var hasEnded: Bool { self == .completed || self == .cancelled || self == .terminated }
}
