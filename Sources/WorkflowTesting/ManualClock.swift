import Synchronization
import Workflow
import WorkflowLocks

/// A clock that moves only when told to, so tests of timers never sleep.
///
/// `sleep(until:)` suspends until ``advance(to:)`` (or ``advance(by:)``) moves the time to or past
/// the deadline; a deadline that has already passed returns at once.
public final class ManualClock: WorkflowClock {
    private struct Sleeper {
        let deadline: WallTime
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: WallTime
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Lock<State>

    /// A clock that reads `now` until advanced.
    public init(now: WallTime = WallTime(nanosecondsSinceEpoch: 1_700_000_000_000_000_000)) {
        state = Lock(State(now: now))
    }

    public func now() -> WallTime { state.withLock { $0.now } }

    /// How many tasks are waiting for a deadline (useful to wait until a timer is armed).
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: WallTime) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time to `time` (never backwards) and wakes every sleeper whose deadline is due.
    public func advance(to time: WallTime) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, time)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the time forward by `duration`.
    public func advance(by duration: Duration) {
        advance(to: now().advanced(by: duration))
    }
}
