import DurableWorkflow
import Workflow

/// A durable workflow whose state encodes a set as an array in the set's own iteration order:
/// the process's hash order, as every `Set` was encoded before encodings were canonical. Its
/// digests, written by one process, do not match replay in another: an instance "written
/// before the fix", for the digest escape hatch.
public struct HashOrderBook: Workflow, Codable, Sendable {
    public init() {}

    public struct State: Equatable, Sendable, Codable {
        public var tags: Set<String> = []
        public init() {}

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(Array(tags))
        }

        public init(from decoder: any Decoder) throws {
            tags = Set(try decoder.singleValueContainer().decode([String].self))
        }
    }

    public struct Rendering: Sendable {
        public let state: State
        public let sink: Sink<Tag>
    }

    public struct Tag: DurableAction, Equatable {
        public typealias WorkflowType = HashOrderBook
        public static let tag = "hashorder.tag"
        public var name: String
        public init(name: String) { self.name = name }
        public func apply(toState state: inout State) -> Never? {
            state.tags.insert(name)
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<HashOrderBook>) -> Rendering {
        Rendering(state: state, sink: context.makeSink(of: Tag.self))
    }

    public static var configuration: DurableConfiguration { DurableConfiguration(actions: ActionRegistry(Tag.self), snapshotEvery: nil) }
}
