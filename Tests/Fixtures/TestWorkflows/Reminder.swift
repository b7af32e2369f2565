import DurableWorkflow
import Workflow

/// Sets a deadline from the action's logged time and records when its durable timer fired.
public struct Reminder: Workflow, Codable, Sendable {
    public init() {}

    public struct State: Codable, Equatable, Sendable {
        public var deadline: WallTime?
        public var firedAt: WallTime?
        public init(deadline: WallTime? = nil, firedAt: WallTime? = nil) {
            self.deadline = deadline
            self.firedAt = firedAt
        }
    }

    public struct Rendering: Sendable {
        public let state: State
        public let sink: Sink<Action>
    }

    public enum Action: DurableAction, Equatable {
        public typealias WorkflowType = Reminder
        case start(delaySeconds: Int)
        case fire

        public func apply(toState state: inout State, context: ApplyContext<Reminder>) -> Never? {
            switch self {
            case .start(let delay): state.deadline = context.now + .seconds(delay)
            case .fire:
                state.firedAt = context.now
                state.deadline = nil
            }
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<Reminder>) -> Rendering {
        if let deadline = state.deadline { context.runTimer(key: "reminder", fireAt: deadline) { Action.fire } }
        return Rendering(state: state, sink: context.makeSink(of: Action.self))
    }
}
