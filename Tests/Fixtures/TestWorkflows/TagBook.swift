import DurableWorkflow
import Workflow

/// A durable workflow whose state holds collections without an order of their own: a `Set` of
/// tags and a dictionary keyed by a struct (written as key-value pairs). Their iteration order is
/// the process's hash order, so only a canonical encoding gives the same digests in every process.
public struct TagBook: Workflow, Codable, Sendable {
    public init() {}

    /// A key that is neither `String` nor `Int`.
    public struct Pair: Codable, Hashable, Sendable {
        public var left: String
        public var right: Int
        public init(left: String, right: Int) {
            self.left = left
            self.right = right
        }
    }

    public struct State: Codable, Equatable, Sendable {
        public var tags: Set<String> = []
        public var scores: [Pair: Int] = [:]
        public var nested: [String: Set<Int>] = [:]
        public init() {}
    }

    public struct Rendering: Sendable {
        public let state: State
        public let sink: Sink<Tag>
    }

    /// Adds tag `name` (and a score and a nested set entry derived from it).
    public struct Tag: DurableAction, Equatable {
        public typealias WorkflowType = TagBook
        public static let tag = "tagbook.tag"
        public var name: String

        public init(name: String) { self.name = name }

        public func apply(toState state: inout State, context: ApplyContext<TagBook>) -> Never? {
            state.tags.insert(name)
            state.scores[Pair(left: name, right: name.count)] = state.tags.count
            state.nested[String(name.prefix(1)), default: []].insert(state.tags.count)
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<TagBook>) -> Rendering {
        Rendering(state: state, sink: context.makeSink(of: Tag.self))
    }

    public static var actions: ActionRegistry { ActionRegistry(Tag.self) }

    /// A state with `count` tags, built by the actions (the same in every process).
    public static func sampleState(count: Int) -> State {
        var state = State()
        for index in 0..<count {
            let context = ApplyContext(props: TagBook(), now: WallTime(nanosecondsSinceEpoch: 0))
            _ = Tag(name: "tag-\(index)").apply(toState: &state, context: context)
        }
        return state
    }
}
