import CoreMetrics
import LMDB
import Logging

/// Where an LMDB store reports its slow writes (``EnvironmentConfiguration/slowWrite``): a warning
/// in the log (label `workflow.lmdb`, through whatever logging system the process bootstrapped)
/// and the counter `workflow_slow_writes` (dimensions `store`, and `kind`: `held` for a write of
/// this process open past the bound, `waiting` for a write of this process waiting that long for
/// another process's).
struct SlowWriteLog: Sendable {
    let logger: Logger
    let held: Counter
    let waiting: Counter

    init(store: String) {
        var logger = Logger(label: "workflow.lmdb")
        logger[metadataKey: "store"] = "\(store)"
        self.logger = logger
        held = Counter(label: "workflow_slow_writes", dimensions: [("store", store), ("kind", "held")])
        waiting = Counter(label: "workflow_slow_writes", dimensions: [("store", store), ("kind", "waiting")])
    }

    func report(_ slow: SlowWrite) {
        switch slow {
        case .held(_, let heldFor):
            held.increment()
            logger.warning("a write transaction of this process has been open for \(WriterHolder.seconds(heldFor)) and holds the store's writer: other writers wait")
        case .waiting(_, let waited, let holder):
            waiting.increment()
            logger.warning("a write has waited \(WriterHolder.seconds(waited)) for the store's writer, held by \(holder)", metadata: [
                "holder.pid": "\(holder.pid.map(String.init) ?? "?")", "holder.state": "\(holder.state.rawValue)",
            ])
        }
    }
}
