import Workflow
import WorkflowStorage

/// A replay gate for a build (rule V3): its workflow types, each with the configuration the
/// build runs it with, checked against every instance of a store copy or an export before a
/// deploy. `wfctl verify --gate` in a service's own tool and `WorkflowReplayer` (WorkflowTesting,
/// for a test over committed exports) run one.
public struct ReplayGate: Sendable {
    private var checks: [String: @Sendable (WorkflowStore, String) throws -> ReplayGateResult] = [:]

    /// A gate with no types yet.
    public init() {}

    /// Gates the instances of `type` with `configuration` (the one the build resumes them with).
    public mutating func register<W: DurableWorkflow>(_ type: W.Type, configuration: DurableConfiguration = DurableConfiguration())
    where W.Rendering: Sendable, W.Output: Sendable {
        checks[W.workflowName] = { store, id in try store.gate(id: id, as: W.self, configuration: configuration) }
    }

    /// The workflow names registered.
    public var workflowNames: [String] { checks.keys.sorted() }

    /// Gates every instance of `store` (or those of `ids`), in id order; `progress` hears of each.
    public func run(on store: WorkflowStore, instances ids: [String]? = nil, progress: (() -> Void)? = nil) throws -> ReplayGateReport {
        let listed = try store.instances().filter { ids?.contains($0.id) ?? true }
        var results: [ReplayGateResult] = [], skipped: [ReplayGateReport.Skipped] = []
        for instance in listed {
            defer { progress?() }
            guard let check = checks[instance.workflowType] else {
                skipped.append(.init(instance: instance.id, workflowType: instance.workflowType))
                continue
            }
            results.append(try check(store, instance.id))
        }
        return ReplayGateReport(results: results, skipped: skipped)
    }
}

/// What a ``ReplayGate`` found: every instance's result, and the results grouped by outcome and
/// cause (worst first).
public struct ReplayGateReport: Sendable, Codable {
    /// An instance whose workflow type the gate does not know.
    public struct Skipped: Sendable, Codable, Hashable {
        public let instance: String
        public let workflowType: String

        public init(instance: String, workflowType: String) {
            self.instance = instance
            self.workflowType = workflowType
        }
    }

    /// The instances that share an outcome and a cause.
    public struct Group: Sendable, Codable, Hashable {
        public let outcome: ReplayGateResult.Outcome
        /// `nil` for the unchanged.
        public let cause: String?
        public let count: Int
        public let instances: [String]
    }

    public let results: [ReplayGateResult]
    public let skipped: [Skipped]
    /// The results grouped by outcome (worst first) and cause (most instances first).
    public let groups: [Group]

    public init(results: [ReplayGateResult], skipped: [Skipped]) {
        self.results = results
        self.skipped = skipped
        groups = Dictionary(grouping: results) { GroupKey(outcome: $0.outcome, cause: $0.cause) }
            .map { Group(outcome: $0.key.outcome, cause: $0.key.cause, count: $0.value.count, instances: $0.value.map(\.instance)) }
            .sorted { ($0.outcome, $0.count, $1.cause ?? "") > ($1.outcome, $1.count, $0.cause ?? "") }
    }

    private struct GroupKey: Hashable {
        let outcome: ReplayGateResult.Outcome
        let cause: String?
    }

    /// The worst outcome of any instance (`nil`: none was gated).
    public var worst: ReplayGateResult.Outcome? { results.map(\.outcome).max() }

    /// How many instances have `outcome`.
    public func count(_ outcome: ReplayGateResult.Outcome) -> Int { results.filter { $0.outcome == outcome }.count }

    /// The results of `outcome`.
    public func results(_ outcome: ReplayGateResult.Outcome) -> [ReplayGateResult] { results.filter { $0.outcome == outcome } }

    /// The gate's exit code: the worst outcome's (0 when every instance is unchanged).
    public var exitCode: Int32 { worst?.exitCode ?? 0 }

    /// The summary as text: a line per group, worst first.
    public var summary: String {
        var lines = ["\(results.count) instance(s) gated" + (skipped.isEmpty ? "" : ", \(skipped.count) skipped (type not registered)")]
        for group in groups {
            let examples = group.instances.prefix(3).joined(separator: ", ") + (group.count > 3 ? ", ..." : "")
            lines.append("\(group.outcome.rawValue) \(group.count): \(group.cause ?? "-") (\(examples))")
        }
        return lines.joined(separator: "\n")
    }
}
