import DurableWorkflow
import Foundation
import Workflow

/// A deploy's replay gate in a test (rule V3): the workflow types of the build under test, each
/// with its configuration, checked against committed exports (`wfctl export` of a store the
/// previous build wrote, snapshots and code versions included) or a copy of a store.
///
/// ```swift
/// @Test func theNextBuildDeploysOverTheLastOnesInstances() throws {
///     var replayer = WorkflowReplayer()
///     replayer.register(OrderWorkflow.self, configuration: .orders)
///     let report = try replayer.check(fixturesIn: URL(fileURLWithPath: "Tests/Fixtures/orders"))
///     #expect(report.worst == .unchanged, "\(report.summary)")
/// }
/// ```
public struct WorkflowReplayer: Sendable {
    /// The gate: the registered types.
    public private(set) var gate = ReplayGate()

    /// A replayer with no types yet.
    public init() {}

    /// Gates the instances of `type` with `configuration`.
    public mutating func register<W: DurableWorkflow>(_ type: W.Type, configuration: DurableConfiguration = DurableConfiguration())
    where W.Rendering: Sendable, W.Output: Sendable {
        gate.register(type, configuration: configuration)
    }

    /// Gates every instance of `store` (a copy of a store, never the one a service runs on).
    public func check(_ store: WorkflowStore) throws -> ReplayGateReport {
        let report = try gate.run(on: store)
        guard !report.results.isEmpty else {
            throw WorkflowReplayerError(
                description: "nothing was gated in \(store.path): "
                    + (report.skipped.isEmpty ? "the store holds no instance" : "no instance's type is registered (\(Set(report.skipped.map(\.workflowType)).sorted()))"))
        }
        return report
    }

    /// Imports every export into one store in memory and gates it; throws when `exports` is empty,
    /// so that a gate over a missing fixture folder cannot pass.
    public func check(exports: [URL]) throws -> ReplayGateReport {
        guard !exports.isEmpty else { throw WorkflowReplayerError(description: "no export to gate: the fixture set is empty") }
        let store = WorkflowStore.inMemory(name: exports.map(\.lastPathComponent).joined(separator: ","))
        for export in exports {
            let text = try String(contentsOf: export, encoding: .utf8)
            var lines: [ExportLine] = []
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
                do {
                    lines.append(try JSONDecoder().decode(ExportLine.self, from: Data(line.utf8)))
                } catch {
                    throw WorkflowReplayerError(description: "line \(number + 1) of \(export.path) is not an export line: \(error)")
                }
            }
            try store.importLines(lines)
        }
        return try check(store)
    }

    /// Gates the exports (`.jsonl` files) in `directory`; throws when it holds none.
    public func check(fixturesIn directory: URL) throws -> ReplayGateReport {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let exports = names.filter { $0.hasSuffix(".jsonl") }.sorted().map { directory.appendingPathComponent($0) }
        guard !exports.isEmpty else {
            throw WorkflowReplayerError(description: "no export (.jsonl) in \(directory.path): the fixture set is empty")
        }
        return try check(exports: exports)
    }
}

/// Why a ``WorkflowReplayer`` gated nothing.
public struct WorkflowReplayerError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
