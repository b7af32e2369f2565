/// A type-erased workflow with a given rendering and output: a node that renders the wrapped
/// workflow as its only child and passes its rendering and outputs through (mapped, if asked).
///
/// Two `AnyWorkflow`s rendered under the same key share their child's state only while they wrap
/// the same workflow type; a different type is a different child.
public struct AnyWorkflow<Rendering, Output>: Workflow {
    public typealias State = Void

    private let storage: AnyWorkflowStorage<Rendering, Output>

    /// Wraps `workflow`.
    public init<W: Workflow>(_ workflow: W) where W.Rendering == Rendering, W.Output == Output {
        storage = AnyWorkflowBox(workflow: workflow, rendering: { $0 }, output: { $0 })
    }

    private init(storage: AnyWorkflowStorage<Rendering, Output>) {
        self.storage = storage
    }

    /// The type of the wrapped workflow.
    public var underlyingType: Any.Type { storage.underlyingType }

    /// The workflow wrapped with its rendering passed through `transform`.
    public func mapRendering<NewRendering>(_ transform: @escaping (Rendering) -> NewRendering) -> AnyWorkflow<NewRendering, Output> {
        AnyWorkflow<NewRendering, Output>(storage: storage.mapped(rendering: transform, output: { $0 }))
    }

    /// The workflow wrapped with its outputs passed through `transform`.
    public func mapOutput<NewOutput>(_ transform: @escaping (Output) -> NewOutput) -> AnyWorkflow<Rendering, NewOutput> {
        AnyWorkflow<Rendering, NewOutput>(storage: storage.mapped(rendering: { $0 }, output: transform))
    }

    public func render(state: Void, context: RenderContext<AnyWorkflow<Rendering, Output>>) -> Rendering {
        storage.render(in: context)
    }
}

/// The wrapped workflow with its transforms, erased to the final rendering and output types.
class AnyWorkflowStorage<Rendering, Output> {
    var underlyingType: Any.Type { fatalError("abstract") }
    func render(in context: RenderContext<AnyWorkflow<Rendering, Output>>) -> Rendering { fatalError("abstract") }
    func mapped<R, O>(rendering: @escaping (Rendering) -> R, output: @escaping (Output) -> O) -> AnyWorkflowStorage<R, O> {
        fatalError("abstract")
    }
}

final class AnyWorkflowBox<W: Workflow, Rendering, Output>: AnyWorkflowStorage<Rendering, Output> {
    let workflow: W
    let rendering: (W.Rendering) -> Rendering
    let output: (W.Output) -> Output

    init(workflow: W, rendering: @escaping (W.Rendering) -> Rendering, output: @escaping (W.Output) -> Output) {
        self.workflow = workflow
        self.rendering = rendering
        self.output = output
    }

    override var underlyingType: Any.Type { W.self }

    override func render(in context: RenderContext<AnyWorkflow<Rendering, Output>>) -> Rendering {
        let output = self.output
        return rendering(context.render(workflow, key: "") { (childOutput: W.Output) in
            ForwardOutput<AnyWorkflow<Rendering, Output>>(output: output(childOutput))
        })
    }

    override func mapped<R, O>(rendering newRendering: @escaping (Rendering) -> R, output newOutput: @escaping (Output) -> O)
    -> AnyWorkflowStorage<R, O> {
        let rendering = self.rendering, output = self.output
        return AnyWorkflowBox<W, R, O>(
            workflow: workflow, rendering: { newRendering(rendering($0)) }, output: { newOutput(output($0)) })
    }
}

extension Workflow {
    /// This workflow, type-erased.
    public func asAnyWorkflow() -> AnyWorkflow<Rendering, Output> { AnyWorkflow(self) }

    /// This workflow with its rendering passed through `transform`.
    public func mapRendering<NewRendering>(_ transform: @escaping (Rendering) -> NewRendering) -> AnyWorkflow<NewRendering, Output> {
        AnyWorkflow(self).mapRendering(transform)
    }

    /// This workflow with its outputs passed through `transform`.
    public func mapOutput<NewOutput>(_ transform: @escaping (Output) -> NewOutput) -> AnyWorkflow<Rendering, NewOutput> {
        AnyWorkflow(self).mapOutput(transform)
    }
}

/// The action an ``AnyWorkflow`` node applies when its child emits: it emits the (mapped) output.
// @unchecked Sendable: a ForwardOutput is created and applied inside one output cascade on the
// thread running the host; it is never queued, sent or stored, so no other thread sees it.
struct ForwardOutput<W: Workflow>: WorkflowAction, @unchecked Sendable {
    typealias WorkflowType = W
    let output: W.Output

    func apply(toState state: inout W.State) -> W.Output? { output }
}
