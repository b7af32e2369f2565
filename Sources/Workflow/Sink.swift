/// The handle a render pass gives out for sending actions of one type to its node.
///
/// A sink stays valid while its node lives and the node's latest render pass still declares a
/// sink of that action type, so a rendering kept from an older pass still reaches the node.
/// A send to a node that has ended, or of a type the latest render no longer declares, is not
/// applied and is reported to observers; it never crashes and never reaches another node.
///
/// Sending when the host is idle applies the action, its output cascade and one render pass
/// before `send` returns. A send that arrives while an action is being applied, or while another
/// thread is running the host, is queued and applied right after, in order.
public struct Sink<Action: WorkflowAction>: Sendable {
    enum Target: Sendable {
        case node(any ActionQueue, NodeID)
        case recorder(@Sendable (Action) -> Void)
    }

    let target: Target

    init(target: Target) { self.target = target }

    /// A sink that hands each action to `record`, for testers and previews.
    package static func recording(_ record: @escaping @Sendable (Action) -> Void) -> Sink {
        Sink(target: .recorder(record))
    }

    /// Sends `action` to the node (see the type's notes for when it is applied).
    public func send(_ action: Action) {
        switch target {
        case .node(let queue, let node):
            queue.enqueue(.send(node, action))
        case .recorder(let record):
            record(action)
        }
    }

    /// Sends `action` and returns once it has been applied, rendered and (for a durable host)
    /// committed to the log; returns `false` if it was discarded (ended node, stopped host).
    @discardableResult
    public func sendAndWait(_ action: Action) async -> Bool {
        switch target {
        case .node(let queue, let node):
            return await withCheckedContinuation { continuation in
                queue.enqueue(.sendAndWait(node, action, Waiter(continuation)))
            }
        case .recorder(let record):
            record(action)
            return true
        }
    }

    /// A closure that sends the action `make` builds from its argument.
    public func callback<Value>(_ make: @escaping @Sendable (Value) -> Action) -> @Sendable (Value) -> Void {
        { value in self.send(make(value)) }
    }
}
