import Workflow

/// The child workflow behind `RenderContext.runTask(key:retry:operation:onResult:)`: runs an
/// async operation that may fail, retrying it as its ``RetryPolicy`` says. Each failed attempt
/// (with the time its retry is due) and the final outcome are actions of this workflow, so a
/// durable host logs them: after a restart, replay restores the attempts made and the wait, and
/// the task goes on with the next attempt under the same idempotency key. Its one output is the
/// outcome: the operation's value, or the last failure.
public struct TaskWorkflow<Value: Codable & Sendable>: Workflow, Sendable {
    let policy: RetryPolicy
    let operation: @Sendable (TaskAttempt) async throws -> Value

    /// A task running `operation` under `policy`.
    public init(policy: RetryPolicy, operation: @escaping @Sendable (TaskAttempt) async throws -> Value) {
        self.policy = policy
        self.operation = operation
    }

    /// What the log says of the task so far.
    public struct State: Codable, Equatable, Sendable {
        /// Attempts that failed.
        public var failedAttempts = 0
        /// The latest failure.
        public var lastFailure: TaskFailure?
        /// When the next attempt is due (after a failure).
        public var retryAt: WallTime?
        /// Whether the outcome was emitted.
        public var finished = false

        /// A task's progress as given (a render test's expected rendering, see `RenderTester.expectTask`).
        public init(failedAttempts: Int = 0, lastFailure: TaskFailure? = nil, retryAt: WallTime? = nil, finished: Bool = false) {
            self.failedAttempts = failedAttempts
            self.lastFailure = lastFailure
            self.retryAt = retryAt
            self.finished = finished
        }
    }

    public typealias Output = Result<Value, TaskFailure>
    /// The task's progress, as its parent may show it.
    public typealias Rendering = State

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<TaskWorkflow>) -> State {
        if !state.finished {
            let worker = AttemptsWorker(
                policy: policy, operation: operation, firstAttempt: state.failedAttempts + 1, notBefore: state.retryAt,
                clock: context.clock, tracer: context.dependency(EngineTracer.self)?.tracer)
            context.run(worker, key: "attempts") { $0.event }
        }
        return state
    }

    /// What happened to the task, as logged: an attempt failed and another is due at a time, an
    /// attempt returned a value, the last attempt failed, or a graceful stop's drain abandoned
    /// an attempt still running at its deadline (the state is unchanged: a resume runs the
    /// attempt again, once, under the same idempotency key).
    public enum Event: DurableAction {
        public typealias WorkflowType = TaskWorkflow
        /// `workflow.task<NAME>` for a ``NamedTaskValue`` (a name that lasts), else
        /// `workflow.task<` and the value type's module-qualified name `>`.
        public static var tag: String {
            if let named = Value.self as? any NamedTaskValue.Type { return "workflow.task<\(named.taskName)>" }
            return qualifiedTag
        }

        /// The tag under the value type's module-qualified name (how every task was logged before
        /// ``NamedTaskValue``): still read when the value type names itself.
        static var qualifiedTag: String { "workflow.task<\(String(reflecting: Value.self))>" }

        case attemptFailed(TaskFailure, retryAt: WallTime)
        case succeeded(Value, attempt: Int)
        case failed(TaskFailure)
        case abandoned(attempt: Int)

        public func apply(toState state: inout State) -> Output? {
            switch self {
            case .attemptFailed(let failure, let retryAt):
                state.failedAttempts = failure.attempt
                state.lastFailure = failure
                state.retryAt = retryAt
                return nil
            case .succeeded(let value, _):
                state.finished = true
                state.retryAt = nil
                return .success(value)
            case .failed(let failure):
                state.failedAttempts = failure.attempt
                state.lastFailure = failure
                state.retryAt = nil
                state.finished = true
                return .failure(failure)
            case .abandoned:
                return nil
            }
        }
    }
}

/// The events of a task, whose registration is ``ActionRegistry/registerTask(_:)``.
protocol TaskEventAction: DurableAction {
    /// How the registration reads in code: `registerTask(Payment.Reply.self)`.
    static var registration: String { get }
}

extension TaskWorkflow.Event: TaskEventAction {
    static var registration: String { "registerTask(\(String(reflecting: Value.self)).self)" }
}

/// A task value type whose tasks' events are logged under a name that lasts,
/// `workflow.task<taskName>`, instead of under its module-qualified type name (which a renamed
/// module or type would orphan). Entries logged before the type named itself still read:
/// ``ActionRegistry/registerTask(_:)`` registers the old tag too.
///
/// ```swift
/// struct BankReply: Codable, Sendable, NamedTaskValue {
///     static let taskName = "payments.bank-reply"
///     var authorization: String
/// }
/// ```
public protocol NamedTaskValue: Codable, Sendable {
    /// The name the value type's tasks' events are logged under, for good.
    static var taskName: String { get }
}

extension ActionRegistry {
    /// Registers the actions of tasks whose operation returns `Value` (every task of a durable
    /// workflow must be registered this way, once per value type). For a ``NamedTaskValue``, the
    /// events logged under the module-qualified name before it named itself read too.
    public mutating func registerTask<Value: Codable & Sendable>(_ value: Value.Type) {
        typealias Event = TaskWorkflow<Value>.Event
        register(Event.self)
        if Event.tag != Event.qualifiedTag { register(Event.self, formerTag: Event.qualifiedTag) }
    }
}
