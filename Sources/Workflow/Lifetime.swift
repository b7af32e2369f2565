import Synchronization
import WorkflowLocks

/// The life of a side effect: it starts after the render pass that first declares it and ends
/// at the first render pass that no longer does (or when the host stops).
public final class Lifetime: Sendable {
    private let state = Lock<(ended: Bool, handlers: [@Sendable () -> Void])>((false, []))

    package init() {}

    /// Whether the side effect has ended.
    public var hasEnded: Bool { state.withLock { $0.ended } }

    /// Registers `handler` to run once when the lifetime ends (at once if it already has).
    public func onEnded(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.ended { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    package func end() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.ended else { return [] }
            state.ended = true
            defer { state.handlers = [] }
            return state.handlers
        }
        handlers.forEach { $0() }
    }
}
