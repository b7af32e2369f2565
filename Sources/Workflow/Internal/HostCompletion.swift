import WorkflowLocks

/// Where a host's result stands, for ``WorkflowHost/completion``: waited for from any thread,
/// settled once by the thread running the host.
final class HostCompletion<Output: Sendable>: Sendable {
    private enum State {
        case running([CheckedContinuation<Result<Output, StoppedBeforeFinishing>, Never>])
        case finished(Output)
        case stopped(StoppedBeforeFinishing)
    }

    private let state = Lock(State.running([]))

    /// The final output, once settled.
    func wait() async throws(StoppedBeforeFinishing) -> Output {
        let result = await withCheckedContinuation { continuation in
            let settled = state.withLock { state -> Result<Output, StoppedBeforeFinishing>? in
                switch state {
                case .running(var waiters):
                    waiters.append(continuation)
                    state = .running(waiters)
                    return nil
                case .finished(let output): return .success(output)
                case .stopped(let error): return .failure(error)
                }
            }
            if let settled { continuation.resume(returning: settled) }
        }
        return try result.get()
    }

    /// The instance finished with `output` (its entry is committed).
    func finish(_ output: Output) {
        settle(.finished(output), with: .success(output))
    }

    /// The host stopped (or the instance ended by a control request: `ending`); a no-op once
    /// finished.
    func stop(failure: (any Error)?, ending: InstanceEnding? = nil) {
        let error = StoppedBeforeFinishing(failure: failure, ending: ending)
        settle(.stopped(error), with: .failure(error))
    }

    private func settle(_ final: State, with result: Result<Output, StoppedBeforeFinishing>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Result<Output, StoppedBeforeFinishing>, Never>] in
            guard case .running(let waiters) = state else { return [] }
            state = final
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }
}

/// The host stopped before its workflow finished (see ``WorkflowHost/completion``).
public struct StoppedBeforeFinishing: Error, CustomStringConvertible {
    /// The error that stopped a durable host (its log could not be written), or `nil` when the
    /// host was stopped: the instance is still running in the store, and resuming it goes on.
    public let failure: (any Error)?
    /// How the instance ended by a control request instead of its workflow's decision
    /// (terminated, cancelled, deleted: rule O2), or `nil`.
    public let ending: InstanceEnding?

    init(failure: (any Error)?, ending: InstanceEnding? = nil) {
        self.failure = failure
        self.ending = ending
    }

    public var description: String {
        if let failure { return "the host failed before its workflow finished: \(failure)" }
        if let ending { return "the instance was \(ending) before its workflow finished" }
        return "the host was stopped before its workflow finished"
    }
}
