import DurableWorkflow
import Workflow

/// A list of numbers whose `Put` action cannot be encoded when its value is negative.
public struct Picky: Workflow, Codable, Sendable {
    public struct Put: DurableAction {
        public typealias WorkflowType = Picky
        public static let tag = "picky.put"
        public var value: Int

        enum CodingKeys: CodingKey { case value }
        public init(value: Int) { self.value = value }
        public init(from decoder: any Decoder) throws {
            value = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .value)
        }
        public func encode(to encoder: any Encoder) throws {
            guard value >= 0 else {
                throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "negative values are not encodable"))
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(value, forKey: .value)
        }

        public func apply(toState state: inout [Int]) -> Never? {
            state.append(value)
            return nil
        }
    }

    public init() {}

    public func makeInitialState() -> [Int] { [] }
    public func render(state: [Int], context: RenderContext<Picky>) -> (values: [Int], sink: Sink<Put>) {
        (state, context.makeSink(of: Put.self))
    }

    public static func configuration(_ mode: DurableConfiguration.Mode) -> DurableConfiguration {
        DurableConfiguration(mode: mode, actions: ActionRegistry(Put.self))
    }
}
