import Workflow

/// Renders a workflow once without a runtime, against declared expectations of its children,
/// workers and side effects; then lets you check the resulting actions, state and output.
///
///     try Parent().renderTester()
///         .expectWorkflow(type: Counter.self, key: "c", producingRendering: counterRendering, producingOutput: 3)
///         .render { rendering in #expect(rendering.total == 10) }
///         .assert(state: 10)
///
/// Every child, worker and side effect the render declares must be expected (and every
/// expectation met), or `render` throws. Actions from child outputs, worker outputs and sinks
/// used inside the `render` closure are applied in order to the state.
public struct RenderTester<WorkflowType: Workflow> {
    let workflow: WorkflowType
    let state: WorkflowType.State
    var now = WallTime.now()
    var children: [ChildExpectation] = []
    var workers: [WorkerExpectation] = []
    var sideEffects: [AnyHashable] = []
    var timers: [TimerExpectation] = []
    var dependencies: [ObjectIdentifier: any Sendable] = [:]

    struct TimerExpectation {
        let key: String
        let deadline: WallTime?
        let fires: Bool
    }

    struct ChildExpectation {
        let type: Any.Type
        let key: String
        let rendering: Any
        let output: Any?
    }

    struct WorkerExpectation {
        let type: Any.Type
        let key: String
        let output: Any?
        let matches: (Any) -> Bool
    }

    /// Provides `service` to `RenderContext.dependency(_:)`.
    public func providing<T: Sendable>(_ service: T, as type: T.Type = T.self) -> Self {
        var copy = self
        copy.dependencies[ObjectIdentifier(type)] = service
        return copy
    }

    /// The time actions see in `ApplyContext.now` (default: when the tester was made).
    public func at(_ time: WallTime) -> Self {
        var copy = self
        copy.now = time
        return copy
    }

    /// Expects a child of `type` under `key` that renders `rendering` and, optionally, emits `output`.
    public func expectWorkflow<Child: Workflow>(
        type: Child.Type, key: String = "", producingRendering rendering: Child.Rendering, producingOutput output: Child.Output? = nil
    ) -> Self {
        var copy = self
        copy.children.append(ChildExpectation(type: type, key: key, rendering: rendering, output: output))
        return copy
    }

    /// Expects a worker of `type` under `key` (optionally checked with `matching`) that emits `output`.
    public func expectWorker<W: Worker>(
        type: W.Type, key: String = "", producingOutput output: W.Output? = nil, matching: @escaping (W) -> Bool = { _ in true }
    ) -> Self {
        var copy = self
        copy.workers.append(WorkerExpectation(type: type, key: key, output: output) { ($0 as? W).map(matching) ?? false })
        return copy
    }

    /// Expects a durable timer under `key` (at `deadline`, if given); with `firing`, its action
    /// is recorded as if the deadline had come.
    public func expectTimer(key: String, deadline: WallTime? = nil, firing: Bool = false) -> Self {
        var copy = self
        copy.timers.append(TimerExpectation(key: key, deadline: deadline, fires: firing))
        return copy
    }

    /// Expects a side effect under `key`.
    public func expectSideEffect(key: some Hashable & Sendable) -> Self {
        var copy = self
        copy.sideEffects.append(AnyHashable(key))
        return copy
    }

    /// Renders once, runs `body` with the rendering (sinks used there record their actions),
    /// applies every recorded action, and returns the result. Throws on any unmet or unexpected
    /// declaration.
    @discardableResult
    public func render(
        file: StaticString = #filePath, line: UInt = #line, _ body: (WorkflowType.Rendering) throws -> Void = { _ in }
    ) throws -> RenderTesterResult<WorkflowType> {
        let backend = TestingBackend<WorkflowType>(expectations: self)
        let problems = backend.problems
        let context = RenderContext<WorkflowType>(backend: backend, programmerErrors: .report { problems.add($0) })
        context.isValid = true
        let rendering = workflow.render(state: state, context: context)
        context.isValid = false
        try body(rendering)
        backend.checkAllMet()
        if !problems.all.isEmpty { throw failure(problems.all.joined(separator: "; "), file, line) }
        var state = self.state
        var outputs: [WorkflowType.Output] = []
        let actions = backend.actions.all
        for action in actions {
            guard let typed = action as? any WorkflowAction<WorkflowType> else { continue }
            if let output = typed.apply(toState: &state, context: ApplyContext(props: workflow, now: now)) { outputs.append(output) }
        }
        return RenderTesterResult(state: state, actions: actions, outputs: outputs)
    }
}

/// What a render test produced: the state after its actions, the actions, and the outputs.
public struct RenderTesterResult<WorkflowType: Workflow> {
    /// The state after applying every recorded action.
    public let state: WorkflowType.State
    /// The actions recorded, in order.
    public let actions: [any WorkflowAction]
    /// The outputs they emitted, in order.
    public let outputs: [WorkflowType.Output]

    /// Throws unless the state equals `expected`.
    @discardableResult
    public func assert(state expected: WorkflowType.State, file: StaticString = #filePath, line: UInt = #line) throws -> Self
    where WorkflowType.State: Equatable {
        try requireEqual(state, expected, "state", file, line)
        return self
    }

    /// Throws unless the outputs equal `expected`.
    @discardableResult
    public func assert(outputs expected: [WorkflowType.Output], file: StaticString = #filePath, line: UInt = #line) throws -> Self
    where WorkflowType.Output: Equatable {
        try requireEqual(outputs, expected, "outputs", file, line)
        return self
    }

    /// Throws unless exactly one action of type `Action` was recorded; runs `check` on it.
    @discardableResult
    public func verifyAction<Action: WorkflowAction>(
        type: Action.Type, file: StaticString = #filePath, line: UInt = #line, _ check: (Action) throws -> Void = { _ in }
    ) throws -> Self {
        guard actions.count == 1, let action = actions.first as? Action else {
            throw failure("expected one \(Action.self), got \(actions.map { "\(Swift.type(of: $0))" })", file, line)
        }
        try check(action)
        return self
    }

    /// Throws if any action was recorded.
    @discardableResult
    public func assertNoAction(file: StaticString = #filePath, line: UInt = #line) throws -> Self {
        guard actions.isEmpty else { throw failure("expected no action, got \(actions)", file, line) }
        return self
    }
}

extension Workflow {
    /// A render tester for this workflow, starting from `initialState` (default: `makeInitialState()`).
    public func renderTester(initialState: State? = nil) -> RenderTester<Self> {
        RenderTester(workflow: self, state: initialState ?? makeInitialState())
    }
}
