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
    /// committed to the log; returns `false` if it was not applied (see ``sendAndCommit(_:)``
    /// for why).
    @discardableResult
    public func sendAndWait(_ action: Action) async -> Bool {
        await outcome(of: action) == nil
    }

    /// Sends `action` and returns once it has been applied, rendered and (for a durable host)
    /// committed to the log. Throws ``SendError`` if it was not applied: the node has ended or
    /// no longer declares this sink, the host has stopped or finished, or a durable host cannot
    /// log the action's type (``DiscardReason/notLoggable``, with the `DurableError` that says
    /// what to register); the host goes on in every case but a stop.
    public func sendAndCommit(_ action: Action) async throws(SendError) {
        if let error = await outcome(of: action) { throw error }
    }

    private func outcome(of action: Action) async -> SendError? {
        switch target {
        case .node(let queue, let node):
            return await Waiter.wait { waiter in queue.enqueue(.sendAndWait(node, action, waiter)) }
        case .recorder(let record):
            record(action)
            return nil
        }
    }

    /// A closure that sends the action `make` builds from its argument.
    public func callback<Value>(_ make: @escaping @Sendable (Value) -> Action) -> @Sendable (Value) -> Void {
        { value in self.send(make(value)) }
    }
}

/// Why an action sent with ``Sink/sendAndCommit(_:)`` was not applied.
public struct SendError: Error, CustomStringConvertible {
    /// Why it was not applied.
    public let reason: DiscardReason
    /// What a durable host reported: the `DurableError` behind ``DiscardReason/notLoggable``, or
    /// the failure that stopped the host.
    public let underlying: (any Error)?

    public init(reason: DiscardReason, underlying: (any Error)? = nil) {
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String {
        let what: String = switch reason {
        case .nodeEnded: "its node has ended"
        case .actionTypeNotDeclared: "its node's latest render pass declares no sink of its type"
        case .workerEnded: "the worker that emitted it has ended"
        case .hostStopped: "the host has stopped"
        case .notLoggable: "the durable host cannot log it"
        case .finished: "the instance has finished"
        }
        return underlying.map { "the action was not applied: \(what): \($0)" } ?? "the action was not applied: \(what)"
    }
}
