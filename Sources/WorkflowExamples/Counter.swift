import DurableWorkflow
import Workflow

/// The durable counter of the README: adds 1 per `Increment`.
public struct Counter: Workflow, Codable, Sendable {
    public init() {}

    /// Adds one.
    public struct Increment: DurableAction {
        public typealias WorkflowType = Counter
        public static let tag = "demo.increment"
        public init() {}
        public func apply(toState state: inout Int) -> Never? {
            state += 1
            return nil
        }
    }

    public func makeInitialState() -> Int { 0 }

    public func render(state: Int, context: RenderContext<Counter>) -> (count: Int, increment: Sink<Increment>) {
        (state, context.makeSink(of: Increment.self))
    }

    /// The actions of this workflow.
    public static var actions: ActionRegistry { ActionRegistry(Increment.self) }
}
