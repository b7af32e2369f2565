import DurableWorkflow
import Workflow
import WorkflowSignals

/// A durable workflow that adds up every version of its signal (each payload an integer): the
/// count and the sum tell whether each version was applied exactly once.
public struct SignalTally: Workflow, Codable, Sendable {
    public let signal: SignalID

    public init(signal: SignalID) { self.signal = signal }

    public struct State: Codable, Equatable, Sendable {
        public var count = 0
        public var sum = 0
        public init(count: Int = 0, sum: Int = 0) {
            self.count = count
            self.sum = sum
        }
    }

    public struct Got: DurableAction {
        public typealias WorkflowType = SignalTally
        public static let tag = "tally.got"
        public let value: Int
        public func apply(toState state: inout State) -> Never? {
            state.count += 1
            state.sum += value
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<SignalTally>) -> State {
        context.awaitSignal(signal, behaviour: .untilTerminated) { delivery in Got(value: (try? delivery.decode(Int.self)) ?? -1_000_000) }
        return state
    }

    /// A configuration with this workflow's actions and `center` provided to render.
    public static func configuration(center: SignalCenter, mode: DurableConfiguration.Mode = .strict) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: mode, actions: ActionRegistry(Got.self))
        configuration.host.provide(center)
        return configuration
    }
}
