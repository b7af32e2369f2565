/// How many instances a store holds of each status, and how long the quietest running one has
/// waited: what an operator looks at first (the console's counts and histogram).
public struct InstanceSummary: Sendable, Hashable, Codable {
    /// Instances per status; a status with none is absent.
    public var counts: [InstanceStatus: Int]
    /// The earliest time of last change (nanoseconds since 1970) among the running instances:
    /// the one that has waited longest for its next action; `nil` when none runs.
    public var oldestRunningUpdate: Int64?

    public init(counts: [InstanceStatus: Int] = [:], oldestRunningUpdate: Int64? = nil) {
        self.counts = counts
        self.oldestRunningUpdate = oldestRunningUpdate
    }

    /// Counts `instance` in.
    public mutating func add(_ instance: StoredInstance) {
        counts[instance.status, default: 0] += 1
        if instance.status == .running { oldestRunningUpdate = min(oldestRunningUpdate ?? .max, instance.updated) }
    }

    /// Every instance counted.
    public var total: Int { counts.values.reduce(0, +) }
}
