import Workflow

/// How a task (`RenderContext.runTask(key:retry:operation:onResult:)`) retries a failing
/// operation: how often, how long it waits between attempts, how long an attempt may take, and
/// which errors are final.
public struct RetryPolicy: Sendable {
    /// The wait after the first failed attempt.
    public var initialInterval: Duration
    /// Each later wait is the previous one times this (at least 1).
    public var backoffCoefficient: Double
    /// No wait is longer than this.
    public var maximumInterval: Duration
    /// Attempts in all, the first included (at least 1); `nil`: no limit.
    public var maximumAttempts: Int?
    /// How long one attempt may run before it counts as failed (`nil`: no limit). An operation
    /// that ignores cancellation keeps running in the background; its result is then ignored.
    public var attemptTimeout: Duration?
    /// Whether an attempt that threw `error` may be retried (default: every error); a `false`
    /// ends the task with that failure.
    public var isRetryable: @Sendable (any Error) -> Bool

    /// A policy; every parameter has a documented default: waits of 1 s, 2 s, 4 s, ... up to
    /// 100 s between 5 attempts in all, no timeout, every error retried.
    public init(
        initialInterval: Duration = .seconds(1), backoffCoefficient: Double = 2, maximumInterval: Duration = .seconds(100),
        maximumAttempts: Int? = 5, attemptTimeout: Duration? = nil, isRetryable: @escaping @Sendable (any Error) -> Bool = { _ in true }
    ) {
        self.initialInterval = initialInterval
        self.backoffCoefficient = max(1, backoffCoefficient)
        self.maximumInterval = maximumInterval
        self.maximumAttempts = maximumAttempts.map { max(1, $0) }
        self.attemptTimeout = attemptTimeout
        self.isRetryable = isRetryable
    }

    /// One attempt, no retry.
    public static var never: RetryPolicy { RetryPolicy(maximumAttempts: 1) }

    /// The wait after failed attempt `attempt` (1 for the first).
    public func delay(after attempt: Int) -> Duration {
        let maximum = Self.seconds(maximumInterval)
        var seconds = Self.seconds(initialInterval)
        for _ in 1..<max(1, attempt) where seconds < maximum { seconds *= backoffCoefficient }
        seconds = min(seconds, maximum)
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// Whether another attempt follows failed attempt `attempt`, which threw `error`.
    func retries(after attempt: Int, error: any Error) -> Bool {
        if let maximumAttempts, attempt >= maximumAttempts { return false }
        return isRetryable(error)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
