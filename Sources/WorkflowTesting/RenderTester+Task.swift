import DurableWorkflow
import Workflow

extension RenderTester {
    /// Expects a task (`RenderContext.runTask(key:retry:operation:onResult:)`) under `key` whose
    /// operation returns `Value`, rendering `progress` and, with `result`, ending with that
    /// outcome: the action the workflow's `onResult` makes of it is applied.
    public func expectTask<Value: Codable & Sendable>(
        _ value: Value.Type = Value.self, key: String, progress: TaskWorkflow<Value>.State = TaskWorkflow<Value>.State(),
        producing result: Result<Value, TaskFailure>? = nil
    ) -> Self {
        expectWorkflow(type: TaskWorkflow<Value>.self, key: key, producingRendering: progress, producingOutput: result)
    }
}
