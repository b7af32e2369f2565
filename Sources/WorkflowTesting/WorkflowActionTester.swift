import Workflow

/// Applies actions to a state without a runtime, then checks the state and the last output.
///
///     try Counter.Action.increment
///         .tester(withState: 0, props: Counter())
///         .assert(state: 1)
public struct WorkflowActionTester<WorkflowType: Workflow> {
    /// The props the actions see.
    public let props: WorkflowType
    /// The state after the actions sent so far.
    public let state: WorkflowType.State
    /// The output of the last action sent (`nil` if it emitted none).
    public let output: WorkflowType.Output?

    /// A tester starting at `state` with `props`.
    public init(props: WorkflowType, state: WorkflowType.State) {
        self.init(props: props, state: state, output: nil)
    }

    private init(props: WorkflowType, state: WorkflowType.State, output: WorkflowType.Output?) {
        self.props = props
        self.state = state
        self.output = output
    }

    /// The tester after applying `action`.
    public func send<Action: WorkflowAction>(_ action: Action) -> Self where Action.WorkflowType == WorkflowType {
        var state = self.state
        let output = action.apply(toState: &state, context: ApplyContext(props: props))
        return Self(props: props, state: state, output: output)
    }

    /// Runs `check` on the state (for states that are not `Equatable`).
    @discardableResult
    public func verifyState(_ check: (WorkflowType.State) throws -> Void) rethrows -> Self {
        try check(state)
        return self
    }

    /// Throws unless the state equals `expected`.
    @discardableResult
    public func assert(state expected: WorkflowType.State, file: StaticString = #filePath, line: UInt = #line) throws -> Self
    where WorkflowType.State: Equatable {
        try requireEqual(state, expected, "state", file, line)
        return self
    }

    /// Throws unless the last action emitted `expected`.
    @discardableResult
    public func assert(output expected: WorkflowType.Output, file: StaticString = #filePath, line: UInt = #line) throws -> Self
    where WorkflowType.Output: Equatable {
        guard output == expected else { throw failure("expected output \(expected), got \(String(describing: output))", file, line) }
        return self
    }

    /// Throws if the last action emitted an output.
    @discardableResult
    public func assertNoOutput(file: StaticString = #filePath, line: UInt = #line) throws -> Self {
        if let output { throw failure("expected no output, got \(output)", file, line) }
        return self
    }
}

extension WorkflowAction {
    /// A tester that applies this action to `state` with `props`.
    public func tester(withState state: WorkflowType.State, props: WorkflowType) -> WorkflowActionTester<WorkflowType> {
        WorkflowActionTester(props: props, state: state).send(self)
    }
}
