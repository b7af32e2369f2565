import ArgumentParser
import DurableWorkflow

/// `wfctl list STORE`
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List instances with type, status, code version, last sequence and update time.",
        discussion: """
        With --versions, how many instances of each code version remain, per status (a mixed fleet drains old versions).
        Example: wfctl list /var/lib/service/workflows --status running --type OrderWorkflow --version 2026.12.1
        """)

    @OptionGroup var options: ReadOptions

    @Option(help: "Only instances with this status (running, completed, failed).")
    var status: InstanceStatus?

    @Option(help: "Only instances whose root workflow type has this name (with or without module).")
    var type: String?

    @Option(name: .customLong("version"), help: "Only instances started under this code version (\"-\": those started under none).")
    var codeVersion: String?

    @Flag(help: "Instead of the instances: per code version, how many there are of each status.")
    var versions = false

    /// A row of `--versions` (documented in docs/wfctl-json.md).
    struct VersionCount: Codable {
        let codeVersion: String?
        let running: Int
        let completed: Int
        let failed: Int
        let cancelled: Int
    }

    func run() throws {
        let filter: String?? = codeVersion.map { version -> String? in version == "-" ? nil : version }
        let instances = try options.open().instances(status: status, workflowType: type, codeVersion: filter)
        if versions { return try emitVersions(instances) }
        if options.json { return emit(try json(instances)) }
        var table = Table("ID", "TYPE", "STATUS", "VERSION", "LAST SEQ", "SNAPSHOT", "UPDATED")
        for instance in instances {
            table.add(instance.id, short(instance.workflowType), instance.status.rawValue, instance.codeVersion ?? "-",
                      "\(instance.lastSequence)", instance.lastSnapshot == 0 ? "-" : "\(instance.lastSnapshot)", iso(instance.updated))
        }
        emit(table.text)
    }

    private func emitVersions(_ instances: [InstanceInfo]) throws {
        let grouped = Dictionary(grouping: instances, by: \.codeVersion)
        let rows = grouped.keys.sorted { ($0 ?? "") < ($1 ?? "") }.map { version in
            let group = grouped[version]!
            func count(_ status: InstanceStatus) -> Int { group.filter { $0.status == status }.count }
            return VersionCount(codeVersion: version, running: count(.running), completed: count(.completed), failed: count(.failed),
                                cancelled: count(.cancelled))
        }
        if options.json { return emit(try json(rows)) }
        var table = Table("VERSION", "RUNNING", "COMPLETED", "FAILED", "CANCELLED")
        for row in rows {
            table.add(row.codeVersion ?? "-", "\(row.running)", "\(row.completed)", "\(row.failed)", "\(row.cancelled)")
        }
        emit(table.text)
    }
}

extension InstanceStatus: ExpressibleByArgument {}
