import ArgumentParser
import DurableWorkflow

/// Options of the commands that change a store.
struct WriteOptions: ParsableArguments {
    @Argument(help: "The store: its directory, or a postgres:// URL with ?schema=NAME (in a wfctl built with the Postgres trait).")
    var store: String

    @Flag(help: "Print JSON instead of text (errors too: {\"error\": {...}} on standard output).")
    var json = false

    func open() throws -> WorkflowStore {
        try openStore(store, readOnly: false)
    }
}

/// What a command that changes an instance prints with `--json`.
struct InstanceChange: Codable {
    /// cancelled, deleted or resumed.
    let action: String
    let instance: String
    /// The instance's record after the change (`nil` once deleted).
    let record: InstanceInfo?
    /// Why `resume` left it failed.
    var problem: String?
}

/// `wfctl resume STORE ID`, `wfctl resume STORE --failed [filters] [--dry-run]`
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mark failed instances running again, once they replay: a running service picks them up, or its next start does.",
        discussion: """
        Each instance is replayed here first (read-only, as `verify` does): it must replay without a problem, so its
        workflow type must be registered in this tool. One that still fails is reported (exit 1) and stays failed.
        Without an id, --failed (or any filter) takes the failed instances the filters select: --kind (the kind of the
        error it failed with, as `wfctl describe` shows it), --type, --version, --updated-before, --updated-after;
        --dry-run replays them and changes nothing. A rerun is a no-op: those resumed are no longer failed.
        Example: wfctl resume /var/lib/service/workflows order-42
        Example: wfctl resume /var/lib/service/workflows --failed --kind unknownActionType --dry-run
        """)

    @OptionGroup var options: WriteOptions

    @Argument(help: "The instance id (or --failed).")
    var id: String?

    @Flag(help: "Every failed instance (narrowed by the filters).")
    var failed = false

    @OptionGroup var selection: Selection

    var dryRun: Bool { selection.dryRun }

    /// One instance's outcome (with --json, an array of them for --failed).
    struct Row: Codable {
        /// resumed, would-resume, left-failed or skipped.
        let action: String
        let instance: String
        let record: InstanceInfo?
        /// Why it was failed.
        let failure: String?
        /// Why it still does not replay (left-failed), or is skipped.
        var problem: String?
    }

    func run() throws {
        let store = try options.open()
        if let id {
            guard !failed else { throw ToolError.usage("give an instance id or --failed, not both") }
            return try resumeOne(id, store: store)
        }
        guard failed || selection.filters else {
            throw ToolError.usage("give the id of a failed instance, or --failed (and filters) for the failed ones")
        }
        guard selection.status.allSatisfy({ $0 == .failed }) else { throw ToolError.usage("resume takes failed instances: --status failed") }
        let selected = try selection.select(from: store, defaultStatuses: [.failed])
        var rows: [Row] = []
        var progress = Progress("replayed instances:", total: selected.count)
        for instance in selected {
            defer { progress.advance() }
            rows.append(try resume(instance, store: store))
        }
        progress.finish()
        if options.json {
            emit(try json(rows))
        } else {
            var table = Table("INSTANCE", "ACTION", "FAILED WITH", "PROBLEM")
            for row in rows {
                table.add(row.instance, row.action, row.failure.map { String($0.prefix(while: { $0 != ":" })) } ?? "-", row.problem ?? "")
            }
            emit(table.text)
            let done = rows.filter { $0.action == "resumed" || $0.action == "would-resume" }.count
            emit("\n\(done) of \(rows.count) failed instance(s) \(dryRun ? "would be resumed" : "resumed")")
        }
        let left = rows.filter { $0.action != "resumed" && $0.action != "would-resume" }
        if !left.isEmpty {
            throw ToolError.finding("\(left.count) instance(s) still do not replay or are not registered: \(left.prefix(5).map(\.instance).joined(separator: ", "))")
        }
    }

    /// Replays `instance` and marks it running when it replays (unless a dry run).
    private func resume(_ instance: InstanceInfo, store: WorkflowStore) throws -> Row {
        guard let support = WorkflowTool.types.support(for: instance.workflowType) else {
            return Row(action: "skipped", instance: instance.id, record: instance, failure: instance.failure,
                       problem: "type \(instance.workflowType) not registered")
        }
        let report = try support.verify(store, instance.id, true)
        if let problem = report.problem {
            return Row(action: "left-failed", instance: instance.id, record: instance, failure: instance.failure, problem: "\(problem)")
        }
        if dryRun { return Row(action: "would-resume", instance: instance.id, record: instance, failure: instance.failure) }
        try store.markRunning(id: instance.id)
        return Row(action: "resumed", instance: instance.id, record: try store.instance(id: instance.id), failure: instance.failure)
    }

    private func resumeOne(_ id: String, store: WorkflowStore) throws {
        guard let instance = try store.instance(id: id) else {
            throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
        }
        guard instance.status == .failed else {
            throw ToolError.usage("\"\(id)\" is \(instance.status.rawValue): only a failed instance is resumed this way")
        }
        let report = try registeredSupport(store: store, id: id).verify(store, id, true)
        if let problem = report.problem {
            if options.json {
                emit(try json(InstanceChange(action: "left-failed", instance: id, record: instance, problem: "\(problem)")))
            }
            throw ToolError.finding("\"\(id)\" still does not replay: \(problem)")
        }
        if dryRun {
            if options.json { return emit(try json(InstanceChange(action: "would-resume", instance: id, record: instance))) }
            return emit("\(id) replays: it would run again")
        }
        try store.markRunning(id: id)
        if options.json { return emit(try json(InstanceChange(action: "resumed", instance: id, record: try store.instance(id: id)))) }
        emit("\(id) is running again: a running service picks it up, or its next start does")
    }
}
