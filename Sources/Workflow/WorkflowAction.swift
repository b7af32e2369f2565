/// A transition of one workflow's state, optionally producing an output for its parent.
///
/// Actions reach the runtime through a ``Sink``, a worker, a timer or a signal; each is applied
/// to the node that declared it, its output cascades synchronously up the tree, and exactly one
/// render pass follows. Actions are values: make them `Codable` (and `DurableAction`) to use
/// them with the durable engine.
///
/// Implement either ``apply(toState:)`` or, when the action needs the workflow's props,
/// ``apply(toState:context:)``.
public protocol WorkflowAction<WorkflowType>: Sendable {
    /// The workflow whose state this action changes.
    associatedtype WorkflowType: Workflow

    /// Changes `state`; returns an output for the parent, or `nil`.
    func apply(toState state: inout WorkflowType.State) -> WorkflowType.Output?

    /// Changes `state` with access to the node's current props through `context`.
    func apply(toState state: inout WorkflowType.State, context: ApplyContext<WorkflowType>) -> WorkflowType.Output?

    /// The runtime's entry point: applies the action and hands its output, if any, to `emit`.
    /// Do not implement it. The default calls ``apply(toState:context:)``; being inlinable, it is
    /// specialised for each action type where the type is declared, so the runtime's generic code
    /// needs no type lookup per action (for the context and the optional output).
    func _apply(
        toState state: inout WorkflowType.State, props: WorkflowType, now: WallTime, versions: InstanceVersions?,
        emit: (WorkflowType.Output) -> Void)
}

extension WorkflowAction {
    @inlinable
    public func _apply(
        toState state: inout WorkflowType.State, props: WorkflowType, now: WallTime, versions: InstanceVersions?,
        emit: (WorkflowType.Output) -> Void
    ) {
        if let output = apply(toState: &state, context: ApplyContext(props: props, now: now, versions: versions)) { emit(output) }
    }

    public func apply(toState state: inout WorkflowType.State, context: ApplyContext<WorkflowType>) -> WorkflowType.Output? {
        apply(toState: &state)
    }

    public func apply(toState state: inout WorkflowType.State) -> WorkflowType.Output? {
        fatalError("\(Self.self) must implement apply(toState:) or apply(toState:context:)")
    }
}

/// What an action may read while it is applied.
public struct ApplyContext<WorkflowType: Workflow> {
    /// The node's current props (the workflow value its parent last rendered).
    public let props: WorkflowType
    /// The time the action was applied. Durable hosts log it and replay the same value, so use
    /// it (never the system clock) for anything the state remembers, such as deadlines.
    public let now: WallTime
    /// The versions the tree's code takes (`nil`: none declared).
    @usableFromInline let versions: InstanceVersions?

    /// Creates a context around `props` at `now`; the runtime and testers make these.
    @inlinable @inline(__always)
    public init(props: WorkflowType, now: WallTime = .now()) {
        self.props = props
        self.now = now
        self.versions = nil
    }

    /// A context whose instance takes `versionMarkers` and started under `codeVersion`, for tests
    /// of actions that branch on them (asking for a marker not listed is a programmer error).
    public init(props: WorkflowType, now: WallTime = .now(), versionMarkers: [String: Int], codeVersion: String? = nil) {
        self.props = props
        self.now = now
        self.versions = InstanceVersions(
            codeVersion: codeVersion, declared: versionMarkers.mapValues { $0...$0 }, markers: versionMarkers, programmerErrors: .trap)
        self.versions?.isReplaying = true
    }

    @inlinable @inline(__always)
    package init(props: WorkflowType, now: WallTime, versions: InstanceVersions?) {
        self.props = props
        self.now = now
        self.versions = versions
    }

    /// The version of the marker `name` this instance takes (rule V1): the one it fixed when it
    /// first reached the marker, as its log says; version 1 where its logged entries reach the
    /// marker without having fixed it (they were written by code from before the marker); the
    /// newest ``HostConfiguration/versionMarkers`` declares when it reaches it live for the first
    /// time (logged with this action's entry, so every replay takes the same branch). A new
    /// instance starts with the newest version of every declared marker.
    ///
    /// ```swift
    /// state.total += context.version("fee") >= 2 ? price + 250 : price
    /// ```
    ///
    /// A marker that is not declared is a programmer error; a version the build no longer
    /// supports stops the instance with `DurableError.Kind.unsupportedVersion`.
    public func version(_ name: String) -> Int {
        guard let versions else {
            preconditionFailure("the version marker \"\(name)\" is not declared: add it to HostConfiguration.versionMarkers")
        }
        return versions.version(name)
    }

    /// The code version the instance started under (`DurableConfiguration.codeVersion` of the
    /// build that started it); `nil` in memory or when none was configured.
    public var codeVersion: String? { versions?.codeVersion }
}

/// An action made from a closure, for in-memory workflows and tests.
/// (Closures cannot be logged: durable workflows use `Codable` action types instead.)
public struct AnyWorkflowAction<WorkflowType: Workflow>: WorkflowAction {
    private enum Body: Sendable {
        case plain(@Sendable (inout WorkflowType.State) -> WorkflowType.Output?)
        case withContext(@Sendable (inout WorkflowType.State, ApplyContext<WorkflowType>) -> WorkflowType.Output?)
        case output(any Sendable)
    }

    private let body: Body

    /// An action that runs `body`.
    public init(_ body: @escaping @Sendable (inout WorkflowType.State) -> WorkflowType.Output?) {
        self.body = .plain(body)
    }

    /// An action that runs `body` with the apply context.
    public init(withContext body: @escaping @Sendable (inout WorkflowType.State, ApplyContext<WorkflowType>) -> WorkflowType.Output?) {
        self.body = .withContext(body)
    }

    /// An action that only emits `output`.
    public init(sendingOutput output: WorkflowType.Output) where WorkflowType.Output: Sendable {
        self.body = .output(output)
    }

    /// An action that changes nothing and emits nothing.
    public static var noAction: Self { Self { _ in nil } }

    public func apply(toState state: inout WorkflowType.State, context: ApplyContext<WorkflowType>) -> WorkflowType.Output? {
        switch body {
        case .plain(let body): return body(&state)
        case .withContext(let body): return body(&state, context)
        case .output(let output): return (output as! WorkflowType.Output)
        }
    }
}
