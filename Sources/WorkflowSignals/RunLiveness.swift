import DurableWorkflow
import Synchronization
import WorkflowLocks

/// A signal center's run as a consumer record names it: its run id and its process.
struct RecordedRun {
    let runID: String
    let process: ProcessIdentity

    /// Whether the run has provably ended: in this process, its center stopped (or was never
    /// opened here); in another, that process is provably dead. A consumer recorded without a
    /// pid was written by a version that did not record one, whose runs cannot be told apart:
    /// it is taken to have ended, as that version did.
    var isProvablyDead: Bool {
        if process.pid == 0 { return true }
        if process == ProcessIdentity.current { return !RunLiveness.isRunning(runID) }
        return process.isProvablyDead
    }
}

/// The runs of this process whose signal center is open.
enum RunLiveness {
    private static let running = Lock<Set<String>>([])

    static func begin(_ runID: String) {
        _ = running.withLock { $0.insert(runID) }
    }

    /// Ends `runID` (a center's `stop()` and its deinit both end it; the first one counts).
    static func end(_ runID: String) {
        _ = running.withLock { $0.remove(runID) }
    }

    static func isRunning(_ runID: String) -> Bool {
        running.withLock { $0.contains(runID) }
    }
}
