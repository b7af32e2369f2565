import WorkflowFeedback

/// A durable feedback-loop reducer: adds numbers and counts events.
public struct Tally: FeedbackReducer, Codable {
    public init() {}

    public struct State: Codable, Equatable, Sendable {
        public var sum = 0
        public var count = 0
        public init(sum: Int = 0, count: Int = 0) {
            self.sum = sum
            self.count = count
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case add(Int)
    }

    public func makeInitialState() -> State { State() }

    public func reduce(_ state: inout State, _ event: Event) {
        switch event {
        case .add(let value):
            state.sum += value
            state.count += 1
        }
    }
}
