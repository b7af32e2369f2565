import Logging
import Workflow

/// A `WorkflowObserver` that writes what the runtime does to a swift-log `Logger`:
/// nodes started and ended, actions applied (at `trace`), render passes with their duration
/// (at `trace`), workers started and ended, and discarded actions (at `warning`).
public struct LoggingObserver: WorkflowObserver {
    /// The logger it writes to.
    public let logger: Logger

    /// An observer writing to `logger`.
    public init(logger: Logger) {
        self.logger = logger
    }

    public func nodeDidStart(_ node: NodeInfo) {
        logger.debug("node started", metadata: ["node": "\(node.path)"])
    }

    public func nodeDidEnd(_ node: NodeInfo) {
        logger.debug("node ended", metadata: ["node": "\(node.path)"])
    }

    public func actionWillApply(_ event: ActionEvent) -> ((Any, Any?) -> Void)? {
        guard logger.logLevel <= .trace else { return nil }
        let logger = self.logger
        let action = "\(event.action)", node = "\(event.node.path)", origin = event.origin?.rawValue ?? "cascade"
        return { _, output in
            logger.trace("action applied", metadata: [
                "node": "\(node)", "action": "\(action)", "origin": "\(origin)",
                "output": "\(output.map { "\($0)" } ?? "none")",
            ])
        }
    }

    public func actionDiscarded(_ action: DiscardedAction) {
        logger.warning("action discarded", metadata: [
            "action": "\(action.actionType)", "reason": "\(action.reason.rawValue)",
            "node": "\(action.node.map { "\($0.path)" } ?? "unknown")", "origin": "\(action.origin.rawValue)",
        ])
    }

    public func renderPassWillStart() -> ((Duration) -> Void)? {
        guard logger.logLevel <= .trace else { return nil }
        let logger = self.logger
        return { duration in logger.trace("render pass", metadata: ["duration": "\(duration)"]) }
    }

    public func workerDidStart(node: NodeInfo, workerType: String, key: String) {
        logger.debug("worker started", metadata: ["node": "\(node.path)", "worker": "\(workerType)", "key": "\(key)"])
    }

    public func workerDidEnd(node: NodeInfo, workerType: String, key: String) {
        logger.debug("worker ended", metadata: ["node": "\(node.path)", "worker": "\(workerType)", "key": "\(key)"])
    }
}
