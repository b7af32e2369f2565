import Dispatch
import Foundation
import WorkflowLocks

/// Threads of a service's own for the store's blocking calls (a start's first commit, a resume's
/// replay): at most `limit` at once, the rest queued in order. Thousands of concurrent starts
/// then block neither the cooperative pool nor Dispatch's workers, which the service's shutdown
/// signal and its hosts' background drains need (2,000 starts on Dispatch's own threads held
/// them all, and SIGTERM was noticed 0.8 s late). A thread with nothing to do for a few seconds
/// ends.
final class BlockingCalls: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var threads = 0
        var idle = 0
    }

    private let limit: Int
    private let idleLimit: Duration
    private let state = Lock(State())
    private let wake = DispatchSemaphore(value: 0)

    init(limit: Int, idleLimit: Duration = .seconds(5)) {
        self.limit = max(1, limit)
        self.idleLimit = idleLimit
    }

    /// `body`'s result, from one of the pool's threads; the calling task is suspended meanwhile.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    private func submit(_ job: @escaping @Sendable () -> Void) {
        enum Start { case wakeIdle, newThread, queued }
        let start = state.withLock { state -> Start in
            state.jobs.append(job)
            if state.idle > 0 {
                state.idle -= 1
                return .wakeIdle
            }
            guard state.threads < limit else { return .queued }
            state.threads += 1
            return .newThread
        }
        switch start {
        case .wakeIdle: wake.signal()
        case .newThread:
            let thread = Thread { [self] in serve() }
            thread.name = "workflow.service.blocking-calls"
            thread.start()
        case .queued: break
        }
    }

    /// A thread's life: the queued jobs, in order, until it waits `idleLimit` for one in vain.
    private func serve() {
        while true {
            let job = state.withLock { state -> (@Sendable () -> Void)? in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            if let job {
                job()
                continue
            }
            let parked = state.withLock { state -> Bool in
                // A job queued since the look above is this thread's to take.
                guard state.jobs.isEmpty else { return false }
                state.idle += 1
                return true
            }
            guard parked else { continue }
            let (seconds, attoseconds) = idleLimit.components
            if wake.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) == .timedOut {
                let ends = state.withLock { state -> Bool in
                    // A `submit` that counted this thread idle has signalled (or will): take that wake-up.
                    guard state.idle > 0, state.jobs.isEmpty else { return false }
                    state.idle -= 1
                    state.threads -= 1
                    return true
                }
                if ends { return }
                wake.wait()
            }
        }
    }
}
