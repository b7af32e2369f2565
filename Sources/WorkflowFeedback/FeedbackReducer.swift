import DurableWorkflow
import Workflow

/// The Mealy machine's transition function: how an event changes the state (rule F1).
///
/// Make the reducer, its `State` and its `Event` `Codable` to run it durably
/// (``FeedbackLoop/durable(store:id:reducer:feedbacks:configuration:)``): its value is the loop's props.
public protocol FeedbackReducer: Sendable {
    /// The loop's state, stored once, in the runtime.
    associatedtype State: Sendable
    /// What the loop reacts to.
    associatedtype Event: Sendable

    /// The state before any event.
    func makeInitialState() -> State
    /// Applies `event` to `state`. Must be deterministic (it is replayed after a restart).
    func reduce(_ state: inout State, _ event: Event)
}

/// A reducer made of closures, for in-memory loops.
public struct ClosureReducer<State: Sendable, Event: Sendable>: FeedbackReducer {
    let initial: State
    let body: @Sendable (inout State, Event) -> Void

    /// A reducer starting at `initial` that applies `reduce`.
    public init(initial: State, reduce: @escaping @Sendable (inout State, Event) -> Void) {
        self.initial = initial
        self.body = reduce
    }

    public func makeInitialState() -> State { initial }
    public func reduce(_ state: inout State, _ event: Event) { body(&state, event) }
}

/// An event together with the state right after it was reduced: what feedbacks see.
public struct Reduced<State: Sendable, Event: Sendable>: Sendable {
    /// The event.
    public let event: Event
    /// The state after `event` was reduced.
    public let state: State
}

/// The workflow a loop runs on: its state is the loop's state, each event is an action, and
/// each reduction is emitted as an output, which the runtime releases only live (never in replay).
/// A durable loop's instances have it as their root type (`FeedbackLoop<R>.Root`): a tool that
/// rebuilds their state registers it (see ``FeedbackLoop/durableConfiguration(_:)``).
public struct ReducerWorkflow<Reducer: FeedbackReducer>: Workflow, Sendable {
    public typealias State = Reducer.State
    public typealias Output = Reduced<Reducer.State, Reducer.Event>

    let reducer: Reducer

    /// The loop's state and the sink its events go through.
    public struct Rendering: Sendable {
        let state: Reducer.State
        let sink: Sink<EventAction<Reducer>>
    }

    public func makeInitialState() -> Reducer.State { reducer.makeInitialState() }

    public func render(state: Reducer.State, context: RenderContext<ReducerWorkflow>) -> Rendering {
        Rendering(state: state, sink: context.makeSink(of: EventAction<Reducer>.self))
    }
}

extension ReducerWorkflow: Codable where Reducer: Codable {}

/// One event of a loop, applied by running the reducer (logged by a durable loop).
public struct EventAction<Reducer: FeedbackReducer>: WorkflowAction {
    public typealias WorkflowType = ReducerWorkflow<Reducer>
    let event: Reducer.Event

    public func apply(toState state: inout Reducer.State, context: ApplyContext<ReducerWorkflow<Reducer>>) -> Reduced<Reducer.State, Reducer.Event>? {
        context.props.reducer.reduce(&state, event)
        return Reduced(event: event, state: state)
    }
}

extension EventAction: Codable where Reducer.Event: Codable {}

extension EventAction: DurableAction where Reducer: Codable, Reducer.Event: Codable {
    public static var tag: String { "feedback.event:\(String(reflecting: Reducer.self))" }
}
