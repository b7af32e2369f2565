import ArgumentParser
import DurableWorkflow

/// `wfctl state STORE ID [--at N] [--diff M]`
struct State: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The state tree of an instance at any sequence (read-only time travel).",
        discussion: """
        Rebuilds the tree by replay from the nearest earlier snapshot; runs no worker and no side effect.
        Needs the instance's workflow type registered in this tool.
        With --diff M, what changed from sequence M to --at (default: the last), field by field.
        Example: wfctl state /var/lib/service/workflows order-42 --at 17
        Example: wfctl state /var/lib/service/workflows order-42 --at 17 --diff 9
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "The instance id.")
    var id: String

    @Option(help: "The sequence to show the state at (default: the last).")
    var at: UInt64?

    @Option(help: "Also the state at this sequence, and what changed from it to --at, field by field.")
    var diff: UInt64?

    @Flag(help: "Do not compare replay with the digests recorded in the log (for instances written before encodings were canonical).")
    var noDigestCheck = false

    func run() throws {
        let store = try options.open()
        let support = try registeredSupport(store: store, id: id)
        let tree = try support.state(store, id, at, !noDigestCheck)
        if let diff {
            let changes = Reports.diff(from: Reports.state(id: id, tree: try support.state(store, id, diff, !noDigestCheck)),
                                       to: Reports.state(id: id, tree: tree))
            if options.json { return emit(try json(changes)) }
            emit("\(id) from sequence \(changes.from) to \(changes.to): \(changes.changes.count) change\(changes.changes.count == 1 ? "" : "s")")
            var table = Table("NODE", "FIELD", "CHANGE", "BEFORE", "AFTER")
            func text(_ value: JSONValue?) -> String { value.flatMap { try? json($0, pretty: false) } ?? "-" }
            for change in changes.changes {
                table.add(change.node, change.field.isEmpty ? "(all)" : change.field, change.change, text(change.before), text(change.after))
            }
            return emit(table.text)
        }
        if options.json { return emit(try json(Reports.state(id: id, tree: tree))) }
        emit("\(id) at sequence \(tree.sequence) (digest \(String(tree.digest, radix: 16)))")
        var table = Table("NODE", "STATE")
        for node in tree.nodes { table.add(node.path.description, readable(node.encodedState, limit: 400)) }
        emit(table.text)
    }
}

/// The registered support for instance `id`'s workflow type in this tool, or a usage error saying how to add it.
func registeredSupport(store: WorkflowStore, id: String) throws -> WorkflowTypes.Support {
    try Reports.registeredSupport(store: store, id: id, types: WorkflowTool.types)
}
