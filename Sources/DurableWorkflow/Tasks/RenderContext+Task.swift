import Workflow

extension RenderContext {
    /// Runs `operation` as a task under `key` while render passes declare it: an attempt at a
    /// time, retried as `retry` says (each attempt gets its number and an idempotency key that is
    /// the same for every attempt, also after a restart). Every failed attempt and the outcome are
    /// logged (as actions of a ``TaskWorkflow`` child), so replay sees the same ones, and the
    /// outcome (the value, or the last ``TaskFailure``) reaches this workflow as the action
    /// `onResult` makes. Record the outcome in the state and stop declaring the task; declaring
    /// it again later, after it ended, runs it again. Returns the task's progress.
    ///
    /// Register the task's actions once per value type: ``ActionRegistry/registerTask(_:)``.
    @discardableResult
    public func runTask<Value: Codable & Sendable, Action: WorkflowAction>(
        key: String, retry: RetryPolicy = RetryPolicy(), operation: @escaping @Sendable (TaskAttempt) async throws -> Value,
        onResult: @escaping (Result<Value, TaskFailure>) -> Action
    ) -> TaskWorkflow<Value>.State where Action.WorkflowType == WorkflowType {
        render(TaskWorkflow(policy: retry, operation: operation), key: key, outputMap: onResult)
    }
}
