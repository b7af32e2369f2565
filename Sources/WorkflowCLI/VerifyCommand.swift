import ArgumentParser
import DurableWorkflow

/// `wfctl verify STORE [ID]`
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay instances, check recorded digests and snapshot+tail against full replay.",
        discussion: """
        Reports the first divergence per instance and exits 1 if any; instances whose type is not
        registered in this tool are reported as skipped, and exits 2 when every instance was skipped
        (nothing was verified).
        Example: wfctl verify /var/lib/service/workflows order-42
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "Only this instance.")
    var id: String?

    @Flag(help: "Do not compare replay with the digests recorded in the log (for instances written before encodings were canonical); snapshots are still checked against full replay.")
    var noDigestCheck = false

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
}
