import ArgumentParser
import DurableWorkflow

/// `wfctl list STORE`
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List instances with type, status, last sequence and update time.",
        discussion: "Example: wfctl list /var/lib/service/workflows --status running --type OrderWorkflow")

    @OptionGroup var options: ReadOptions

    @Option(help: "Only instances with this status (running, completed, failed).")
    var status: InstanceStatus?

    @Option(help: "Only instances whose root workflow type has this name (with or without module).")
    var type: String?

    func run() throws {
        let instances = try options.open().instances(status: status, workflowType: type)
        if options.json { return emit(try json(instances)) }
        var table = Table("ID", "TYPE", "STATUS", "LAST SEQ", "SNAPSHOT", "UPDATED")
        for instance in instances {
            table.add(instance.id, short(instance.workflowType), instance.status.rawValue, "\(instance.lastSequence)",
                      instance.lastSnapshot == 0 ? "-" : "\(instance.lastSnapshot)", iso(instance.updated))
        }
        emit(table.text)
    }
}

extension InstanceStatus: ExpressibleByArgument {}
