import DurableWorkflow
import Workflow
import WorkflowSignals

/// A durable workflow that waits for an "upload finished" signal and records its payload.
public struct AwaitUpload: Workflow, Codable, Sendable {
    public let signal: SignalID

    public init(signal: SignalID) { self.signal = signal }

    public struct State: Codable, Equatable, Sendable {
        public var uploaded: String?
        public var deliveries = 0
        public init(uploaded: String? = nil, deliveries: Int = 0) {
            self.uploaded = uploaded
            self.deliveries = deliveries
        }
    }

    public struct Received: DurableAction {
        public typealias WorkflowType = AwaitUpload
        public static let tag = "upload.received"
        public let value: String
        public func apply(toState state: inout State) -> Never? {
            state.uploaded = value
            state.deliveries += 1
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<AwaitUpload>) -> State {
        if state.uploaded == nil {
            context.awaitSignal(signal) { delivery in Received(value: (try? delivery.decode(String.self)) ?? "<undecodable>") }
        }
        return state
    }

    /// A configuration with this workflow's actions and `center` provided to render.
    public static func configuration(center: SignalCenter, mode: DurableConfiguration.Mode = .strict) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: mode, actions: ActionRegistry(Received.self))
        configuration.host.provide(center)
        return configuration
    }
}
