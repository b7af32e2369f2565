import WorkflowLocks

/// A host's in-flight work (a task's attempt calling out), so that a graceful stop can let it
/// finish and commit its outcome instead of dropping it (``WorkflowHost/drain(within:)``).
///
/// A worker asks to ``begin(abandon:)`` an attempt; the gate refuses once the host drains (the
/// attempt then never starts: it runs after a restart). An attempt ends in one of two ways: it
/// ``settle(_:)``s with its outcome, or the drain's deadline ``abandonRemaining()``s it (its
/// `abandon` reports that instead, and a later outcome is dropped). Either report carries the
/// attempt's token; the worker's delivery loop calls ``forwarded(_:)`` once the report is in the
/// host's queue. The drain waits for every attempt to be forwarded, then flushes the queue, which
/// applies and commits the reports ahead of the flush.
package final class DrainGate: Sendable {
    /// Where one attempt stands.
    private enum Attempt {
        /// Running; `abandon` reports it abandoned (given its token): `false` if its worker's
        /// stream had ended already (nobody reads the report).
        case running(abandon: @Sendable (UInt64) -> Bool)
        /// Its outcome is reported (or being reported); waiting for the delivery loop.
        case settled
        /// Reported abandoned; waiting for the delivery loop.
        case abandoned
    }

    private struct State {
        var draining = false
        /// Paused (rule O2): an attempt about to start waits until the host is unpaused.
        var paused = false
        var nextPausedWaiter: UInt64 = 0
        var pausedWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var cancelledPausedWaiters: Set<UInt64> = []
        var nextToken: UInt64 = 0
        var attempts: [UInt64: Attempt] = [:]
        var drained = 0
        var abandoned = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var cancelledWaiters: Set<UInt64> = []
    }

    private let state = Lock(State())

    package init() {}

    /// A token for an attempt about to start, or `nil` when the host drains (do not start it). While
    /// the host is paused it waits until it is unpaused (or drains, or the calling task is
    /// cancelled: `nil`).
    package func begin(abandon: @escaping @Sendable (UInt64) -> Bool) async -> UInt64? {
        while true {
            let begun = state.withLock { state -> UInt64?? in
                if state.draining { return .some(nil) }
                if state.paused { return nil }
                state.nextToken += 1
                state.attempts[state.nextToken] = .running(abandon: abandon)
                return .some(state.nextToken)
            }
            if let begun { return begun }
            await untilUnpaused()
            if Task.isCancelled { return nil }
        }
    }

    /// From now on no attempt starts until ``unpause()``; those running go on.
    package func pause() {
        state.withLock { $0.paused = true }
    }

    /// Lets the attempts waiting to start go.
    package func unpause() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.paused = false
            defer { state.pausedWaiters.removeAll() }
            return Array(state.pausedWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether an attempt is running (or reporting).
    package var hasAttemptsInFlight: Bool { state.withLock { !$0.attempts.isEmpty } }

    /// Returns once the gate is not paused (or drains), or when the calling task is cancelled.
    private func untilUnpaused() async {
        let id = state.withLock { state in
            state.nextPausedWaiter += 1
            return state.nextPausedWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if !state.paused || state.draining || state.cancelledPausedWaiters.remove(id) != nil { return true }
                    state.pausedWaiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.pausedWaiters.removeValue(forKey: id) { return waiter }
                state.cancelledPausedWaiters.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }

    /// The attempt finished: `true` if its outcome is to be reported, `false` if the drain
    /// abandoned it first (its abandonment is reported instead; drop the outcome).
    package func settle(_ token: UInt64) -> Bool {
        state.withLock { state in
            guard case .running = state.attempts[token] else { return false }
            state.attempts[token] = .settled
            return true
        }
    }

    /// The attempt reports nothing (its worker was cancelled): it no longer counts.
    package func withdraw(_ token: UInt64) {
        let waiters = state.withLock { state in
            state.attempts[token] = nil
            return Self.takeWaitersIfIdle(&state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The report of attempt `token` is in the host's queue, ahead of any later flush.
    package func forwarded(_ token: UInt64) {
        let waiters = state.withLock { state in
            switch state.attempts.removeValue(forKey: token) {
            case .settled?: if state.draining { state.drained += 1 }
            case .abandoned?: state.abandoned += 1
            case .running?, nil: break
            }
            return Self.takeWaitersIfIdle(&state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// From now on no attempt starts (those waiting for an unpause give up).
    package func startDraining() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.draining = true
            defer { state.pausedWaiters.removeAll() }
            return Array(state.pausedWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Starts draining (as ``startDraining()``) only if no attempt is in flight, in one step
    /// with that check: an attempt either began before, and the gate does not drain, or is
    /// refused after. Whether it drains now.
    package func startDrainingIfIdle() -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            guard state.attempts.isEmpty else { return nil }
            state.draining = true
            defer { state.pausedWaiters.removeAll() }
            return Array(state.pausedWaiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume() }
        return true
    }

    /// Reports every attempt still running as abandoned.
    package func abandonRemaining() {
        let abandon = state.withLock { state -> [(UInt64, @Sendable (UInt64) -> Bool)] in
            var reports: [(UInt64, @Sendable (UInt64) -> Bool)] = []
            for (token, attempt) in state.attempts {
                guard case .running(let abandon) = attempt else { continue }
                state.attempts[token] = .abandoned
                reports.append((token, abandon))
            }
            return reports
        }
        for (token, report) in abandon where !report(token) { withdraw(token) }
    }

    /// How many attempts the drain let finish, and how many it abandoned, so far.
    package var counts: (drained: Int, abandoned: Int) { state.withLock { ($0.drained, $0.abandoned) } }

    /// Whether every attempt was forwarded within `timeout`.
    package func idle(within timeout: Duration) async -> Bool {
        if state.withLock({ $0.attempts.isEmpty }) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.untilIdle()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || state.withLock { $0.attempts.isEmpty }
        }
    }

    /// Returns once no attempt is in flight, or when the calling task is cancelled.
    private func untilIdle() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.attempts.isEmpty || state.cancelledWaiters.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelledWaiters.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }

    private static func takeWaitersIfIdle(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard state.attempts.isEmpty, !state.waiters.isEmpty else { return [] }
        defer { state.waiters.removeAll() }
        return Array(state.waiters.values)
    }
}

/// A worker output that reports an attempt the host's ``DrainGate`` tracks.
package protocol InFlightReport: Sendable {
    /// The attempt's token from ``DrainGate/begin(abandon:)``, if it had one.
    var inFlightToken: UInt64? { get }
}
