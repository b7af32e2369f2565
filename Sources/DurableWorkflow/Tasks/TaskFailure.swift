import Workflow

/// Why an attempt of a task failed, as logged (the error itself is not kept: it need not be
/// `Codable`, and replay must see the same value).
public struct TaskFailure: Error, Codable, Sendable, Hashable, CustomStringConvertible {
    /// The attempt that failed (1 for the first).
    public var attempt: Int
    /// The error's type name.
    public var errorType: String
    /// The error's description.
    public var message: String
    /// Whether the attempt ran out of time (``RetryPolicy/attemptTimeout``).
    public var timedOut: Bool

    public init(attempt: Int, errorType: String, message: String, timedOut: Bool = false) {
        self.attempt = attempt
        self.errorType = errorType
        self.message = message
        self.timedOut = timedOut
    }

    /// The failure of `attempt`, which threw `error`.
    init(attempt: Int, error: any Error) {
        if let timeout = error as? AttemptTimedOut {
            self.init(attempt: attempt, errorType: "AttemptTimedOut", message: timeout.description, timedOut: true)
        } else {
            self.init(attempt: attempt, errorType: String(reflecting: type(of: error)), message: String(describing: error))
        }
    }

    public var description: String { "attempt \(attempt) failed: \(message)" }
}

/// An attempt ran longer than its ``RetryPolicy/attemptTimeout``.
struct AttemptTimedOut: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the attempt timed out after \(timeout)" }
}

/// One attempt of a task, as its operation sees it.
public struct TaskAttempt: Sendable {
    /// 1 for the first attempt, then 2, 3, ...; an attempt a crash interrupted before its
    /// outcome was logged runs again under the same number.
    public let number: Int
    /// The same for every attempt of the task, also after a restart (a durable host's worker
    /// key: `<instance><node path>#<key>@<sequence>`; `nil` in memory): pass it to the system the
    /// operation calls, so that a repeated attempt is recognized there.
    public let idempotencyKey: String?
}
