import DurableWorkflow
import Workflow

/// The workflow types a tool can rebuild state for (time travel, `verify`). Register each root
/// workflow type with the configuration its instances run with (its action registry and codec).
public struct WorkflowTypes: Sendable {
    package struct Support: Sendable {
        /// The state of an instance at a sequence (default: the last); the flag says whether
        /// replay checks recorded digests.
        package let state: @Sendable (WorkflowStore, String, UInt64?, Bool) throws -> StateTree
        /// Verifies an instance; the flag says whether replay checks recorded digests.
        package let verify: @Sendable (WorkflowStore, String, Bool) throws -> VerificationReport
        /// What this build would make of an instance (the replay gate), with the configuration as registered.
        let gate: @Sendable (WorkflowStore, String) throws -> ReplayGateResult
        /// The configuration as registered, for the store being inspected.
        let configuration: @Sendable (WorkflowStore) throws -> DurableConfiguration
    }

    private(set) var supports: [String: Support] = [:]

    /// No types: the tool can still list, log, inspect signals, export, import, compact and fork.
    public init() {}

    /// Registers root workflow type `W` with the `configuration` its instances use.
    public mutating func register<W: DurableWorkflow>(_ type: W.Type, configuration: DurableConfiguration)
    where W.Rendering: Sendable, W.Output: Sendable {
        register(type) { _ in configuration }
    }

    /// Registers `W` with a configuration made for the store being inspected (e.g. one that
    /// provides the store's `SignalCenter` to workflows that await signals).
    public mutating func register<W: DurableWorkflow>(
        _ type: W.Type, configuration: @escaping @Sendable (WorkflowStore) throws -> DurableConfiguration
    ) where W.Rendering: Sendable, W.Output: Sendable {
        @Sendable func made(_ store: WorkflowStore, checkingDigests: Bool) throws -> DurableConfiguration {
            var made = try configuration(store)
            if !checkingDigests { made.checksRecordedDigests = false }
            return made
        }
        supports[W.workflowName] = Support(
            state: { store, id, sequence, digests in
                try store.state(of: id, as: W.self, at: sequence, configuration: made(store, checkingDigests: digests))
            },
            verify: { store, id, digests in try store.verify(id: id, as: W.self, configuration: made(store, checkingDigests: digests)) },
            gate: { store, id in try store.gate(id: id, as: W.self, configuration: configuration(store)) },
            configuration: configuration)
    }

    package func support(for workflowType: String) -> Support? { supports[workflowType] }

    /// The registered type names.
    public var names: [String] { supports.keys.sorted() }
}
