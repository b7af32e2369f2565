import DurableWorkflow
import Workflow

/// A durable counter: `Add(amount)` adds `amount * step`. Its log, replayed, must give the sum.
public struct DurableCounter: Workflow, Codable, Sendable {
    public var step: Int

    public init(step: Int = 1) { self.step = step }

    public struct State: Codable, Equatable, Sendable {
        public var count = 0
        public var applied = 0
        public init(count: Int = 0, applied: Int = 0) {
            self.count = count
            self.applied = applied
        }
    }

    public struct Rendering: Sendable {
        public let state: State
        public let sink: Sink<Add>
    }

    public struct Add: DurableAction, Equatable {
        public typealias WorkflowType = DurableCounter
        public static let tag = "counter.add"
        public var amount: Int

        public init(amount: Int) { self.amount = amount }

        public func apply(toState state: inout State, context: ApplyContext<DurableCounter>) -> Never? {
            state.count += amount * context.props.step
            state.applied += 1
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<DurableCounter>) -> Rendering {
        Rendering(state: state, sink: context.makeSink(of: Add.self))
    }

    /// The registry holding this workflow's actions.
    public static var actions: ActionRegistry { ActionRegistry(Add.self) }
}
