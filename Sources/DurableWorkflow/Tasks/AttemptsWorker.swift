import Tracing
import Workflow
import WorkflowLocks

/// Runs a task's attempts, from `firstAttempt` on and not before `notBefore`, reporting each
/// failure (with the time the next attempt is due) and the outcome as the task's events. One
/// worker runs every attempt, so the idempotency key it was started with holds for all of them;
/// a re-render with the task's new state is the same work (no restart).
struct AttemptsWorker<Value: Codable & Sendable>: Worker, DescribedWorker {
    let policy: RetryPolicy
    let operation: @Sendable (TaskAttempt) async throws -> Value
    let firstAttempt: Int
    let notBefore: WallTime?
    let clock: any WorkflowClock
    /// Where each attempt's span goes (`nil`: no spans).
    let tracer: (any Tracer)?

    func run() -> AsyncStream<AttemptReport<Value>> {
        let worker = self
        return AsyncStream { continuation in
            let task = Task {
                await worker.attempts {
                    if case .terminated = continuation.yield($0) { return false }
                    return true
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func isEquivalent(to other: AttemptsWorker) -> Bool { true }

    var wait: WorkerWait { .task(attempt: firstAttempt, notBefore: notBefore) }

    /// Runs attempts until one succeeds, the policy gives up, the task is cancelled, or the host
    /// drains (an attempt is not started then; one running reports its outcome, or that the
    /// drain abandoned it).
    /// `report` says whether the report was taken (`false`: the worker's stream ended).
    private func attempts(_ report: @escaping @Sendable (AttemptReport<Value>) -> Bool) async {
        let idempotencyKey = WorkerContext.idempotencyKey, gate = WorkerContext.drainGate
        // A report nobody reads (the stream ended) no longer holds up a drain.
        func send(_ event: TaskWorkflow<Value>.Event, _ token: UInt64?) {
            if !report(AttemptReport(event: event, token: token)), let token { gate?.withdraw(token) }
        }
        var number = firstAttempt
        do {
            if let notBefore { try await clock.sleep(until: notBefore) }
            while true {
                let attempt = number
                let token: UInt64?
                if let gate {
                    guard let begun = await gate.begin(abandon: { report(AttemptReport(event: .abandoned(attempt: attempt), token: $0)) })
                    else { return }
                    token = begun
                } else {
                    token = nil
                }
                let outcome = await traced(TaskAttempt(number: number, idempotencyKey: idempotencyKey))
                if let gate, let token {
                    // Abandoned by the drain: that was reported, and this outcome is dropped.
                    guard gate.settle(token) else { return }
                    if Task.isCancelled {
                        gate.withdraw(token)
                        return
                    }
                } else {
                    try Task.checkCancellation()
                }
                switch outcome {
                case .success(let value):
                    send(.succeeded(value, attempt: number), token)
                    return
                case .failure(let error):
                    let failure = TaskFailure(attempt: number, error: error)
                    guard policy.retries(after: number, error: error) else {
                        send(.failed(failure), token)
                        return
                    }
                    let retryAt = clock.now() + policy.delay(after: number)
                    send(.attemptFailed(failure, retryAt: retryAt), token)
                    try await clock.sleep(until: retryAt)
                    number += 1
                }
            }
        } catch {
            // Cancelled: the task is no longer declared, or its host stopped.
        }
    }

    /// One attempt, in a span of its own when there is a tracer.
    private func traced(_ attempt: TaskAttempt) async -> Result<Value, any Error> {
        guard let tracer else { return await self.attempt(attempt) }
        let span = tracer.startSpan("workflow.task.attempt", ofKind: .client)
        span.attributes["workflow.task.attempt"] = attempt.number
        if let key = attempt.idempotencyKey { span.attributes["workflow.task.idempotency_key"] = key }
        let outcome = await self.attempt(attempt)
        if case .failure(let error) = outcome { span.recordError(error) }
        span.end()
        return outcome
    }

    /// One attempt, ended by the policy's timeout if it has one.
    private func attempt(_ attempt: TaskAttempt) async -> Result<Value, any Error> {
        let operation = self.operation
        guard let timeout = policy.attemptTimeout else {
            do { return .success(try await operation(attempt)) } catch { return .failure(error) }
        }
        let deadline = clock.now() + timeout, clock = self.clock
        let race = AttemptRace<Value>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.begin(continuation)
                race.add(Task {
                    do { race.settle(.success(try await operation(attempt))) } catch { race.settle(.failure(error)) }
                })
                race.add(Task {
                    do {
                        try await clock.sleep(until: deadline)
                        race.settle(.failure(AttemptTimedOut(timeout: timeout)))
                    } catch {}
                })
            }
        } onCancel: {
            race.settle(.failure(CancellationError()))
        }
    }
}

/// What an ``AttemptsWorker`` emits: the task's event, with the token of the attempt it ends
/// when the host's drain gate tracks it.
struct AttemptReport<Value: Codable & Sendable>: InFlightReport {
    let event: TaskWorkflow<Value>.Event
    let token: UInt64?

    var inFlightToken: UInt64? { token }
}

/// An attempt against its timeout: the first to finish settles it and cancels the other (an
/// operation that ignores cancellation runs on, its result ignored).
private final class AttemptRace<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<Value, any Error>, Never>?
        var settled: Result<Value, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Lock(State())

    func begin(_ continuation: CheckedContinuation<Result<Value, any Error>, Never>) {
        let settled = state.withLock { state -> Result<Value, any Error>? in
            if state.settled == nil { state.continuation = continuation }
            return state.settled
        }
        if let settled { continuation.resume(returning: settled) }
    }

    func add(_ task: Task<Void, Never>) {
        let cancel = state.withLock { state -> Bool in
            if state.settled != nil { return true }
            state.tasks.append(task)
            return false
        }
        if cancel { task.cancel() }
    }

    func settle(_ result: Result<Value, any Error>) {
        let (continuation, tasks) = state.withLock { state -> (CheckedContinuation<Result<Value, any Error>, Never>?, [Task<Void, Never>]) in
            guard state.settled == nil else { return (nil, []) }
            state.settled = result
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(returning: result)
    }
}
