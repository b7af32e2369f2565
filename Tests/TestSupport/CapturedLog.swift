import Logging
import WorkflowLocks

/// A swift-log destination that keeps every message logged through ``logger``, with its level
/// and metadata, for a test to read.
public final class CapturedLog: Sendable {
    public typealias Line = (level: Logger.Level, message: String, metadata: Logger.Metadata)

    private let lines = Lock<[Line]>([])

    public init() {}

    /// Every line so far, in order.
    public var all: [Line] { lines.withLock { $0 } }

    /// The messages logged at `level`.
    public func messages(at level: Logger.Level) -> [String] { all.filter { $0.level == level }.map(\.message) }

    /// A logger (at level trace) whose lines are kept here.
    public var logger: Logger {
        var logger = Logger(label: "test") { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let line: Line = (event.level, "\(event.message)", metadata.merging(event.metadata ?? [:]) { $1 })
            log.lines.withLock { $0.append(line) }
        }
    }
}
