import ArgumentParser
import DurableWorkflow
import Foundation

/// `wfctl verify STORE [ID]`
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay instances, check recorded digests and snapshot+tail against full replay; with --gate, what this build would make of each.",
        discussion: """
        Reports the first divergence per instance and exits 1 if any; instances whose type is not
        registered in this tool are reported as skipped, and exits 2 when every instance was skipped
        (nothing was verified).
        With --gate (a deploy's replay gate, run by the new build's tool over a copy of the store or an
        export, a .jsonl file of `wfctl export`): each instance is unchanged, fullReplayFails,
        resumesWithOtherWaits (render declares other timers, workers, tasks or signal waits, or the same
        under other idempotency keys), resumesWithDifferentState or failsAtResume, with the first
        divergence and the render diff; a summary groups them by cause. Exit code: the worst outcome's,
        0, 10, 11, 12 or 13 (in that order).
        Example: wfctl verify /var/lib/service/workflows order-42
        Example: wfctl verify --gate --json /backups/workflows.jsonl > gate.json
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "Only this instance.")
    var id: String?

    @Flag(help: "Do not compare replay with the digests recorded in the log (for instances written before encodings were canonical); snapshots are still checked against full replay.")
    var noDigestCheck = false

    @Flag(help: "Run the replay gate: what this tool's build (its registered types and configurations) would make of each instance.")
    var gate = false

    struct Row: Codable {
        let instance: String
        let result: String
        let entries: UInt64
        let snapshot: UInt64
        let problem: String?
        /// Why the latest snapshot does not fit this build (resumes replay the whole log).
        var unusableSnapshot: String? = nil
    }

    func run() throws {
        if gate { return try runGate() }
        let store = try options.open()
        let ids: [String]
        if let id {
            _ = try registeredSupport(store: store, id: id)
            ids = [id]
        } else {
            ids = try store.instances().map(\.id)
        }
        var rows: [Row] = []
        var progress = Progress("verified instances:", total: ids.count)
        defer { progress.finish() }
        for id in ids {
            defer { progress.advance() }
            guard let instance = try store.instance(id: id) else { continue }
            guard let support = WorkflowTool.types.support(for: instance.workflowType) else {
                rows.append(Row(instance: id, result: "skipped", entries: instance.lastSequence, snapshot: instance.lastSnapshot,
                                problem: "type \(instance.workflowType) not registered"))
                continue
            }
            let report = try support.verify(store, id, !noDigestCheck)
            rows.append(Row(instance: id, result: report.isConsistent ? "ok" : "diverged", entries: report.entries,
                            snapshot: report.snapshotSequence, problem: report.problem?.description,
                            unusableSnapshot: report.unusableSnapshot))
        }
        if options.json {
            emit(try json(rows))
        } else {
            var table = Table("INSTANCE", "RESULT", "ENTRIES", "SNAPSHOT", "PROBLEM")
            for row in rows {
                table.add(row.instance, row.result, "\(row.entries)", row.snapshot == 0 ? "-" : "\(row.snapshot)",
                          row.problem ?? row.unusableSnapshot.map { "note: \($0)" } ?? "")
            }
            emit(table.text)
        }
        let diverged = rows.filter { $0.result == "diverged" }
        if !diverged.isEmpty {
            throw ToolError.finding("\(diverged.count) instance(s) diverged: \(diverged.map(\.instance).joined(separator: ", "))")
        }
        if !rows.isEmpty, rows.allSatisfy({ $0.result == "skipped" }) {
            throw ToolError.usage(
                "nothing was verified: the workflow types of all \(rows.count) instance(s) are not registered in this tool; "
                    + "build one with WorkflowTool.main(types:) that registers them")
        }
    }

    /// The store the gate reads: the one named, or an export imported into memory.
    private func gateStore() throws -> WorkflowStore {
        guard options.store.hasSuffix(".jsonl") else { return try options.open() }
        guard let text = try? String(contentsOfFile: options.store, encoding: .utf8) else {
            throw ToolError.usage("cannot read the export \(options.store)")
        }
        var lines: [ExportLine] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            guard let item = try? JSONDecoder().decode(ExportLine.self, from: Data(line.utf8)) else {
                throw ToolError.usage("line \(number + 1) of \(options.store) is not an export line")
            }
            lines.append(item)
        }
        let store = WorkflowStore.inMemory(name: options.store)
        do {
            try store.importLines(lines)
        } catch let error as ExportLineError {
            throw ToolError.usage("\(options.store): \(error)")
        }
        return store
    }

    private func runGate() throws {
        let store = try gateStore()
        let ids = try id.map { [$0] } ?? store.instances().map(\.id)
        var results: [ReplayGateResult] = [], skipped: [ReplayGateReport.Skipped] = []
        var progress = Progress("gated instances:", total: ids.count)
        for id in ids {
            defer { progress.advance() }
            guard let instance = try store.instance(id: id) else { throw ToolError.usage("no instance \"\(id)\" in \(store.path)") }
            guard let support = WorkflowTool.types.support(for: instance.workflowType) else {
                skipped.append(.init(instance: id, workflowType: instance.workflowType))
                continue
            }
            results.append(try support.gate(store, id))
        }
        progress.finish()
        let report = ReplayGateReport(results: results, skipped: skipped)
        if options.json {
            emit(try json(report))
        } else {
            var table = Table("INSTANCE", "VERSION", "OUTCOME", "CAUSE")
            for result in results { table.add(result.instance, result.codeVersion ?? "-", result.outcome.rawValue, result.cause ?? "") }
            for skip in skipped { table.add(skip.instance, "-", "skipped", "type \(skip.workflowType) not registered") }
            emit(table.text)
            for result in results where result.outcome != .unchanged { emit("\n" + Self.details(result)) }
            emit("\n" + report.summary)
        }
        if results.isEmpty, !skipped.isEmpty {
            throw ToolError.usage(
                "nothing was gated: the workflow types of all \(skipped.count) instance(s) are not registered in this tool; "
                    + "build one with WorkflowTool.main(types:) that registers them")
        }
        if let worst = report.worst, worst != .unchanged {
            throw ToolError.gate(worst.exitCode, "\(results.count - report.count(.unchanged)) of \(results.count) instance(s) would change; the worst: \(worst.rawValue)")
        }
    }

    /// One changed instance, in lines: its problem, divergence and render diff.
    static func details(_ result: ReplayGateResult) -> String {
        var lines = ["\(result.instance): \(result.outcome.rawValue)"]
        // The divergence says in its lines what a divergence's message says at length.
        if let problem = result.problem, result.divergence == nil || result.problemKind != "nonDeterministic" {
            lines.append("  problem: \(problem)")
        }
        if let divergence = result.divergence {
            lines.append("  diverges at \(divergence.sequence)" + (divergence.action.map { " (\($0) on \(divergence.node ?? "?"))" } ?? ""))
            if let before = divergence.stateBefore { lines.append("    before:   \(before)") }
            if let after = divergence.replayedAfter { lines.append("    replayed: \(after)") }
            for change in divergence.changes { lines.append("    \(change)") }
        }
        if let diff = result.renderDiff {
            for wait in diff.removed { lines.append("  - \(wait.node)#\(wait.key) (was \(wait.idempotencyKey))") }
            for wait in diff.added { lines.append("  + \(wait.node)#\(wait.key) \(wait.kind ?? "") (\(wait.idempotencyKey))") }
            for pair in diff.rekeyed { lines.append("  ~ \(pair.before.idempotencyKey) -> \(pair.after.idempotencyKey)") }
        } else {
            lines.append("  waits: not recorded in this log (written before declarations were noted)")
        }
        if let note = result.note { lines.append("  note: \(note)") }
        if result.uncheckedDigests > 0 { lines.append("  \(result.uncheckedDigests) digest(s) not compared (a state form changed past undoing)") }
        return lines.joined(separator: "\n")
    }
}
