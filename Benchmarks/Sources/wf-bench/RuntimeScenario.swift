import Workflow

/// The in-memory runtime: actions per second and render pass cost against tree shape.
enum RuntimeScenario {
    static let name = "runtime"

    static func run(runs: Int, scale: Double) -> [Measurement] {
        var results: [Measurement] = []

        let sends = Int(300_000 * scale)
        results.append(Measurement.measure(name, "one-node", metric: "actions_per_s", runs: runs,
                                           detail: "sink.send on a 1-node workflow; apply + 1 render pass each") {
            let host = WorkflowHost(workflow: Leaf())
            let sink = host.rendering.sink
            let elapsed = seconds { for _ in 0..<sends { sink.send(.increment) } }
            precondition(host.rendering.value == sends)
            return Double(sends) / elapsed
        })

        let leafSends = Int(3_000 * scale)
        results.append(Measurement.measure(name, "leaf-of-1000", metric: "actions_per_s", runs: runs,
                                           detail: "send to one leaf of a 1,000-node tree (root + 999 leaves)") {
            let host = WorkflowHost(workflow: Wide(width: 999))
            let sink = host.rendering.leaves[500].sink
            let elapsed = seconds { for _ in 0..<leafSends { sink.send(.increment) } }
            precondition(host.rendering.leaves[500].value == leafSends)
            return Double(leafSends) / elapsed
        })

        let passes = Int(2_000 * scale)
        results.append(Measurement.measure(name, "render-wide-1000", metric: "render_pass_us", runs: runs,
                                           detail: "props update re-rendering root + 999 leaf children") {
            let host = WorkflowHost(workflow: Wide(width: 999))
            let elapsed = seconds {
                for version in 1...passes { host.update(workflow: Wide(width: 999, version: version)) }
            }
            return elapsed / Double(passes) * 1e6
        })
        results.append(Measurement.measure(name, "render-deep-1000", metric: "render_pass_us", runs: runs,
                                           detail: "props update re-rendering a chain of 1,000 nodes") {
            let host = WorkflowHost(workflow: Deep(depth: 1000))
            let elapsed = seconds {
                for version in 1...passes { host.update(workflow: Deep(depth: 1000, version: version)) }
            }
            return elapsed / Double(passes) * 1e6
        })
        return results
    }
}

/// A one-node counter.
struct Leaf: Workflow, Sendable {
    var id = 0
    struct Rendering: Sendable {
        let value: Int
        let sink: Sink<Action>
    }
    enum Action: WorkflowAction {
        typealias WorkflowType = Leaf
        case increment
        func apply(toState state: inout Int) -> Never? {
            state += 1
            return nil
        }
    }
    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Leaf>) -> Rendering {
        Rendering(value: state, sink: context.makeSink(of: Action.self))
    }
}

/// A root with `width` leaf children.
struct Wide: Workflow, Sendable {
    var width: Int
    var version = 0
    struct Rendering: Sendable { let leaves: [Leaf.Rendering] }
    func render(state: Void, context: RenderContext<Wide>) -> Rendering {
        var leaves: [Leaf.Rendering] = []
        leaves.reserveCapacity(width)
        for index in 0..<width { leaves.append(context.render(Leaf(id: index), key: String(index))) }
        return Rendering(leaves: leaves)
    }
}

/// A chain of `depth` nodes.
struct Deep: Workflow, Sendable {
    var depth: Int
    var version = 0
    func render(state: Void, context: RenderContext<Deep>) -> Int {
        depth > 1 ? context.render(Deep(depth: depth - 1, version: version)) + 1 : 1
    }
}
