import Synchronization
import Workflow
import WorkflowLocks

/// A counter: the smallest workflow with state, a sink and an output.
struct Counter: Workflow, Sendable {
    var step = 1

    struct Rendering: Sendable {
        let count: Int
        let sink: Sink<Action>
        func increment() { sink.send(.increment) }
    }

    enum Action: WorkflowAction, Equatable {
        typealias WorkflowType = Counter
        case increment
        case emit

        func apply(toState state: inout Int, context: ApplyContext<Counter>) -> Int? {
            switch self {
            case .increment:
                state += context.props.step
                return nil
            case .emit:
                return state
            }
        }
    }

    typealias Output = Int

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<Counter>) -> Rendering {
        Rendering(count: state, sink: context.makeSink(of: Action.self))
    }
}

/// A parent that adds 10 whenever its child counter emits.
struct Parent: Workflow, Sendable {
    var showChild = true

    struct Rendering: Sendable {
        let total: Int
        let child: Counter.Rendering?
    }

    struct ChildEmitted: WorkflowAction {
        typealias WorkflowType = Parent
        let value: Int
        func apply(toState state: inout Int) -> Never? {
            state += 10
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<Parent>) -> Rendering {
        let child = showChild ? context.render(Counter(), key: "c") { ChildEmitted(value: $0) } : nil
        return Rendering(total: state + (child?.count ?? 0), child: child)
    }
}

/// A thread-safe log of events, for observers and side effects.
final class EventLog: Sendable {
    private let events = Lock<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
    func count(where predicate: (String) -> Bool) -> Int { all.filter(predicate).count }
}

/// An observer that writes what it sees to an ``EventLog``.
struct RecordingObserver: WorkflowObserver {
    let log: EventLog
    func nodeDidStart(_ node: NodeInfo) { log.append("start \(node.path)") }
    func nodeDidEnd(_ node: NodeInfo) { log.append("end \(node.path)") }
    func actionDiscarded(_ action: DiscardedAction) { log.append("discarded \(action.reason.rawValue) \(action.actionType)") }
    func renderPassWillStart() -> ((Duration) -> Void)? { { _ in log.append("render") } }
    func actionWillApply(_ event: ActionEvent) -> ((Any, Any?) -> Void)? {
        let before = "\(event.stateBefore)"
        return { after, _ in log.append("apply \(event.node.path) \(before)->\(after)") }
    }
    func workerDidStart(node: NodeInfo, workerType: String, key: String) { log.append("worker start \(key)") }
    func workerDidEnd(node: NodeInfo, workerType: String, key: String) { log.append("worker end \(key)") }
}

/// Declares a sink for `Bump` only while `offersBump` is true.
struct Bumper: Workflow, Sendable {
    var offersBump: Bool

    struct Rendering: Sendable {
        let value: Int
        let bump: Sink<Bump>?
    }

    struct Bump: WorkflowAction {
        typealias WorkflowType = Bumper
        func apply(toState state: inout Int) -> Never? {
            state += 100
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<Bumper>) -> Rendering {
        Rendering(value: state, bump: offersBump ? context.makeSink(of: Bump.self) : nil)
    }
}

/// A value shared between threads behind a lock.
final class Locked<Value: Sendable>: Sendable {
    private let storage: Lock<Value>
    init(_ value: Value) { storage = Lock(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
