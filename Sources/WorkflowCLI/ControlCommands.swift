import ArgumentParser
import DurableWorkflow
import Foundation

/// What a control verb's command does, shared by `cancel`, `terminate`, `pause`, `unpause` and
/// `delete` (rule O2, bulk verbs rule O3): one instance by id, or every instance a selection
/// takes; each request recorded in the store and answered by the host that runs its instance
/// (or applied here when no live host does).
struct ControlRun {
    let verb: ControlVerb
    let options: WriteOptions
    let id: String?
    let selection: Selection
    let reason: String?
    let deadline: Duration?
    let timeout: Duration
    /// The statuses the verb takes when `--status` is not given (`nil`: any).
    let defaultStatuses: [InstanceStatus]?

    /// One instance's row (with --json, an array of them for a selection; one object for an id).
    struct Row: Codable {
        let instance: String
        /// Its status before the verb.
        let status: InstanceStatus
        /// applied, unchanged, refused, or would-<verb> (a dry run).
        let outcome: String
        /// The request's number within the instance (0: refused before it was recorded).
        var request: UInt64?
        /// The log entry that applied it.
        var sequence: UInt64?
        var detail: String?
        var answeredBy: String?
    }

    func run() throws {
        let store = try options.open()
        let selected: [InstanceInfo]
        if let id {
            guard !selection.filters else { throw ToolError.usage("give an instance id or filters, not both") }
            guard let instance = try store.instance(id: id) else {
                throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
            }
            selected = [instance]
        } else {
            guard selection.filters else {
                throw ToolError.usage("give an instance id, or filters (--status, --type, --version, --kind, --updated-before, --updated-after)")
            }
            selected = try selection.select(from: store, defaultStatuses: defaultStatuses)
        }
        let rows: [Row]
        if selection.dryRun {
            rows = selected.map { Row(instance: $0.id, status: $0.status, outcome: "would-\(verb.rawValue)") }
        } else {
            let answers = try store.control(verb, ids: selected.map(\.id), reason: reason, deadline: deadline, timeout: timeout)
            let byID = Dictionary(answers.map { ($0.instance, $0) }) { first, _ in first }
            rows = selected.map { instance in
                guard let answer = byID[instance.id] else {
                    return Row(instance: instance.id, status: instance.status, outcome: "unchanged", detail: "gone meanwhile")
                }
                return Row(instance: instance.id, status: instance.status, outcome: answer.outcome.rawValue, request: answer.request,
                           sequence: answer.sequence, detail: answer.detail, answeredBy: answer.answeredBy)
            }
        }
        report(rows)
        let refused = rows.filter { $0.outcome == "refused" }
        if !refused.isEmpty {
            throw ToolError.finding(refused.count == 1 && id != nil
                ? "\(verb.rawValue) \(refused[0].instance) was refused: \(refused[0].detail ?? "")"
                : "\(refused.count) of \(rows.count) request(s) were refused: \(refused.prefix(5).map(\.instance).joined(separator: ", "))")
        }
    }

    private func report(_ rows: [Row]) {
        if options.json {
            if id != nil, let row = rows.first { return emit((try? json(row)) ?? "{}") }
            return emit((try? json(rows)) ?? "[]")
        }
        if id != nil, let row = rows.first {
            if selection.dryRun { return emit("\(row.instance) (\(row.status.rawValue)) would be \(verb.pastTense)") }
            let entry = row.sequence.map { " as entry \($0)" } ?? ""
            switch row.outcome {
            case "applied": return emit("\(verb.pastTense) \(row.instance)\(verb == .delete ? "" : entry), by \(row.answeredBy ?? "-")")
            case "unchanged": return emit("\(row.instance) unchanged: \(row.detail ?? "")")
            default: return
            }
        }
        var table = Table("INSTANCE", "STATUS", "OUTCOME", "REQUEST", "ENTRY", "DETAIL")
        for row in rows {
            table.add(row.instance, row.status.rawValue, row.outcome, row.request.map { "\($0)" } ?? "-", row.sequence.map { "\($0)" } ?? "-",
                      row.detail ?? "")
        }
        emit(table.text)
        let applied = rows.filter { $0.outcome == "applied" }.count
        emit(selection.dryRun ? "\n\(rows.count) instance(s) would be \(verb.pastTense)"
             : "\n\(applied) of \(rows.count) instance(s) \(verb.pastTense); \(rows.filter { $0.outcome == "unchanged" }.count) unchanged, "
                + "\(rows.filter { $0.outcome == "refused" }.count) refused")
    }
}

/// Options every control verb takes.
struct ControlOptions: ParsableArguments {
    @Option(help: "Why (kept with the request and, for cancel and terminate, in the log).")
    var reason: String?

    @Option(help: "How long to wait for the answer of the host that runs an instance (500ms, 10s, 2m).")
    var timeout = DurationArgument(.seconds(10))
}

/// `wfctl cancel STORE [ID] [filters]`
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a running instance's workflow to cancel: it cleans up and ends as cancelled.",
        discussion: """
        The request is recorded in the store and applied by the process whose host runs the instance, wherever it
        runs, as an entry of its log; this command waits for its answer. A root workflow that is a CancellableWorkflow
        sees the request (its children as its policy says), cleans up and ends cancelled; one that is not ends at once.
        An instance still running at --deadline is ended, cancelled. With no live host, it is ended here, at once.
        Without an id, every instance the filters select (by default those running or paused); --dry-run lists them.
        Example: wfctl cancel /var/lib/service/workflows order-42 --reason "customer asked"
        Example: wfctl cancel /var/lib/service/workflows --type Payment --updated-before 2d --dry-run
        """)

    @OptionGroup var options: WriteOptions
    @Argument(help: "The instance id (or filters).") var id: String?
    @OptionGroup var control: ControlOptions
    @OptionGroup var selection: Selection

    @Option(help: "How long the workflow gets to clean up before the instance is ended anyway (\"none\": no limit).")
    var deadline = "60s"

    func run() throws {
        let limit: Duration?
        if deadline == "none" {
            limit = nil
        } else if let parsed = Selection.duration(deadline) {
            limit = parsed
        } else {
            throw ToolError.usage("--deadline takes a duration (30s, 5m, 1h) or \"none\", not \"\(deadline)\"")
        }
        try ControlRun(verb: .cancel, options: options, id: id, selection: selection, reason: control.reason, deadline: limit,
                       timeout: control.timeout.duration, defaultStatuses: [.running, .paused]).run()
    }
}

/// `wfctl terminate STORE [ID] [filters]`
struct Terminate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End a running instance at once, as terminated: its workers stop, its workflows are told nothing.",
        discussion: """
        Recorded in the store and applied by the process whose host runs the instance (here when none does).
        Without an id, every instance the filters select (by default those running or paused).
        Example: wfctl terminate /var/lib/service/workflows order-42 --reason fraud
        """)

    @OptionGroup var options: WriteOptions
    @Argument(help: "The instance id (or filters).") var id: String?
    @OptionGroup var control: ControlOptions
    @OptionGroup var selection: Selection

    func run() throws {
        try ControlRun(verb: .terminate, options: options, id: id, selection: selection, reason: control.reason, deadline: nil,
                       timeout: control.timeout.duration, defaultStatuses: [.running, .paused]).run()
    }
}

/// `wfctl pause STORE [ID] [filters]`
struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a running instance: no action is applied and no timer fires until it is unpaused.",
        discussion: """
        Its host first lets the task attempts in flight report (up to 30 s), then logs the pause. What arrives
        meanwhile (sends, worker outputs, timers, signals) waits in order; a paused instance stays paused across
        restarts (status paused), and a service does not resume it. Without an id, every running instance the
        filters select.
        Example: wfctl pause /var/lib/service/workflows --type Payment --version 2026.12.1
        """)

    @OptionGroup var options: WriteOptions
    @Argument(help: "The instance id (or filters).") var id: String?
    @OptionGroup var selection: Selection

    @Option(help: "Why (kept with the request).")
    var reason: String?

    @Option(help: "How long to wait for the answer of the host that runs an instance.")
    var timeout = DurationArgument(.seconds(40))

    func run() throws {
        try ControlRun(verb: .pause, options: options, id: id, selection: selection, reason: reason, deadline: nil,
                       timeout: timeout.duration, defaultStatuses: [.running]).run()
    }
}

/// `wfctl unpause STORE [ID] [filters]`
struct Unpause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unpause an instance: what waited is applied in order (a timer that came due fires once).",
        discussion: """
        Without an id, every paused instance the filters select. An instance no live host holds becomes running,
        and a running service adopts it.
        Example: wfctl unpause /var/lib/service/workflows --status paused --type Payment
        """)

    @OptionGroup var options: WriteOptions
    @Argument(help: "The instance id (or filters).") var id: String?
    @OptionGroup var control: ControlOptions
    @OptionGroup var selection: Selection

    func run() throws {
        try ControlRun(verb: .unpause, options: options, id: id, selection: selection, reason: control.reason, deadline: nil,
                       timeout: control.timeout.duration, defaultStatuses: [.paused]).run()
    }
}

/// `wfctl delete STORE [ID] [filters]`
struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete an instance: its record, log and snapshots; a live host that runs it stops first.",
        discussion: """
        Without an id, every instance the filters select (of any status unless --status says).
        Example: wfctl delete /var/lib/service/workflows order-42
        Example: wfctl delete /var/lib/service/workflows --status completed --updated-before 30d --dry-run
        """)

    @OptionGroup var options: WriteOptions
    @Argument(help: "The instance id (or filters).") var id: String?
    @OptionGroup var control: ControlOptions
    @OptionGroup var selection: Selection

    func run() throws {
        try ControlRun(verb: .delete, options: options, id: id, selection: selection, reason: control.reason, deadline: nil,
                       timeout: control.timeout.duration, defaultStatuses: nil).run()
    }
}
