import Workflow

/// A buggy workflow: with `sendNow`, its render pass sends through its own sink (rule R3).
public struct SendsDuringRender: Workflow, Sendable {
    public var sendNow: Bool

    public init(sendNow: Bool = false) { self.sendNow = sendNow }

    public struct Rendering: Sendable {
        public let count: Int
    }

    public struct Bump: WorkflowAction {
        public typealias WorkflowType = SendsDuringRender
        public func apply(toState state: inout Int) -> Never? {
            state += 1
            return nil
        }
    }

    public func makeInitialState() -> Int { 0 }

    public func render(state: Int, context: RenderContext<SendsDuringRender>) -> Rendering {
        let sink = context.makeSink(of: Bump.self)
        if sendNow && state == 0 { sink.send(Bump()) }
        return Rendering(count: state)
    }
}
