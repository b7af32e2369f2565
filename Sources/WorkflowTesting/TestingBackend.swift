import Synchronization
import Workflow
import WorkflowLocks

/// Actions recorded by a render test, in order, from any thread.
final class RecordedActions: Sendable {
    private let storage = Lock<[any WorkflowAction]>([])
    func record(_ action: any WorkflowAction) { storage.withLock { $0.append(action) } }
    var all: [any WorkflowAction] { storage.withLock { $0 } }
}

/// A render context backend that serves expectations instead of running anything.
final class TestingBackend<WorkflowType: Workflow>: RenderContextBackend {
    private var expectations: RenderTester<WorkflowType>
    let actions = RecordedActions()
    let problems = Problems()

    init(expectations: RenderTester<WorkflowType>) {
        self.expectations = expectations
    }

    func makeSink<Action: WorkflowAction>(of actionType: Action.Type) -> Sink<Action> where Action.WorkflowType == WorkflowType {
        let actions = self.actions
        return Sink.recording { actions.record($0) }
    }

    func render<Child: Workflow, Action: WorkflowAction>(
        _ child: Child, key: String, outputMap: @escaping (Child.Output) -> Action
    ) -> Child.Rendering where Action.WorkflowType == WorkflowType {
        guard let index = expectations.children.firstIndex(where: { $0.type == Child.self && $0.key == key }) else {
            fatalError("RenderTester: \(WorkflowType.self) rendered an unexpected child \(Child.self) with key \"\(key)\"; add expectWorkflow(type: \(Child.self).self, key: \"\(key)\", producingRendering: ...)")
        }
        let expectation = expectations.children.remove(at: index)
        if let output = expectation.output as? Child.Output { actions.record(outputMap(output)) }
        guard let rendering = expectation.rendering as? Child.Rendering else {
            fatalError("RenderTester: the expected rendering for \(Child.self) is not a \(Child.Rendering.self)")
        }
        return rendering
    }

    func run<W: Worker, Action: WorkflowAction>(
        _ worker: W, key: String, origin: ActionOrigin, outputMap: @escaping (W.Output) -> Action
    ) where Action.WorkflowType == WorkflowType {
        guard let index = expectations.workers.firstIndex(where: { $0.type == W.self && $0.key == key }) else {
            problems.add("unexpected worker \(W.self) with key \"\(key)\"")
            return
        }
        let expectation = expectations.workers.remove(at: index)
        if !expectation.matches(worker) { problems.add("worker \(W.self) with key \"\(key)\" did not match") }
        if let output = expectation.output as? W.Output { actions.record(outputMap(output)) }
    }

    func runTimer<Action: WorkflowAction>(key: String, deadline: WallTime, action: @escaping () -> Action)
    where Action.WorkflowType == WorkflowType {
        guard let index = expectations.timers.firstIndex(where: { $0.key == key }) else {
            problems.add("unexpected timer \"\(key)\" at \(deadline)")
            return
        }
        let expectation = expectations.timers.remove(at: index)
        if let expected = expectation.deadline, expected != deadline {
            problems.add("timer \"\(key)\" fires at \(deadline), expected \(expected)")
        }
        if expectation.fires { actions.record(action()) }
    }

    func dependency(_ type: ObjectIdentifier) -> (any Sendable)? { expectations.dependencies[type] }

    func runSideEffect(key: AnyHashable, action: @escaping (Lifetime) -> Void) {
        guard let index = expectations.sideEffects.firstIndex(of: key) else {
            problems.add("unexpected side effect \(key)")
            return
        }
        expectations.sideEffects.remove(at: index)
    }

    func checkAllMet() {
        for child in expectations.children { problems.add("expected child \(child.type) with key \"\(child.key)\" was not rendered") }
        for worker in expectations.workers { problems.add("expected worker \(worker.type) with key \"\(worker.key)\" was not run") }
        for key in expectations.sideEffects { problems.add("expected side effect \(key) was not run") }
        for timer in expectations.timers { problems.add("expected timer \"\(timer.key)\" was not declared") }
    }
}

/// Problems found during a render test, from any thread.
final class Problems: Sendable {
    private let storage = Lock<[String]>([])
    func add(_ problem: String) { storage.withLock { $0.append(problem) } }
    var all: [String] { storage.withLock { $0 } }
}
