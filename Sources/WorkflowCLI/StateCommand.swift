import ArgumentParser
import DurableWorkflow

/// `wfctl state STORE ID [--at N]`
struct State: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The state tree of an instance at any sequence (read-only time travel).",
        discussion: """
        Rebuilds the tree by replay from the nearest earlier snapshot; runs no worker and no side effect.
        Needs the instance's workflow type registered in this tool.
        Example: wfctl state /var/lib/service/workflows order-42 --at 17
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "The instance id.")
    var id: String

    @Option(help: "The sequence to show the state at (default: the last).")
    var at: UInt64?

    @Flag(help: "Do not compare replay with the digests recorded in the log (for instances written before encodings were canonical).")
    var noDigestCheck = false

    struct Report: Codable {
        struct Node: Codable {
            let path: String
            let state: JSONValue?
        }
        let instance: String
        let sequence: UInt64
        let digest: String
        let nodes: [Node]
    }

    func run() throws {
        let store = try options.open()
        let support = try registeredSupport(store: store, id: id)
        let tree = try support.state(store, id, at, !noDigestCheck)
        if options.json {
            return emit(try json(Report(
                instance: id, sequence: tree.sequence, digest: String(tree.digest, radix: 16),
                nodes: tree.nodes.map { .init(path: $0.path.description, state: JSONValue.parse($0.encodedState)) })))
        }
        emit("\(id) at sequence \(tree.sequence) (digest \(String(tree.digest, radix: 16)))")
        var table = Table("NODE", "STATE")
        for node in tree.nodes { table.add(node.path.description, readable(node.encodedState, limit: 400)) }
        emit(table.text)
    }
}

/// The registered support for instance `id`'s workflow type, or a usage error saying how to add it.
func registeredSupport(store: WorkflowStore, id: String) throws -> WorkflowTypes.Support {
    guard let instance = try store.instance(id: id) else {
        throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
    }
    guard let support = WorkflowTool.types.support(for: instance.workflowType) else {
        throw ToolError.usage(
            "the workflow type \(instance.workflowType) of \"\(id)\" is not registered in this tool; build one with WorkflowTool.main(types:) that registers it")
    }
    return support
}
