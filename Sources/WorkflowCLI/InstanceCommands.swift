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

/// `wfctl cancel STORE ID`
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End an instance for good: its status becomes cancelled, no resume runs it again, its log is kept.",
        discussion: "Stop its host first (a running instance is refused). Example: wfctl cancel /var/lib/service/workflows order-42")

    @OptionGroup var options: WriteOptions

    @Argument(help: "The instance id.")
    var id: String

    func run() throws {
        let store = try options.open()
        try store.cancel(id: id)
        if options.json { return emit(try json(InstanceChange(action: "cancelled", instance: id, record: try store.instance(id: id)))) }
        emit("cancelled \(id)")
    }
}

/// `wfctl delete STORE ID`
struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete an instance: its record, log and snapshots.",
        discussion: "Stop its host first (a running instance is refused). Example: wfctl delete /var/lib/service/workflows order-42")

    @OptionGroup var options: WriteOptions

    @Argument(help: "The instance id.")
    var id: String

    func run() throws {
        let store = try options.open()
        try store.delete(id: id)
        if options.json { return emit(try json(InstanceChange(action: "deleted", instance: id, record: nil))) }
        emit("deleted \(id)")
    }
}

/// `wfctl resume STORE ID`
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mark a failed instance running again, once it replays, so the service's next resumeAll runs it.",
        discussion: """
        The instance is replayed here first (read-only, as `verify` does): it must replay without a problem, so its
        workflow type must be registered in this tool. A problem is reported (exit 1) and the instance stays failed.
        Example: wfctl resume /var/lib/service/workflows order-42
        """)

    @OptionGroup var options: WriteOptions

    @Argument(help: "The instance id.")
    var id: String

    func run() throws {
        let store = try options.open()
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
        try store.markRunning(id: id)
        if options.json { return emit(try json(InstanceChange(action: "resumed", instance: id, record: try store.instance(id: id)))) }
        emit("\(id) is running again: the service resumes it at its next resumeAll")
    }
}
