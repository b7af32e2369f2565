/// What `render` uses to reach the runtime: sinks, child workflows, workers and side effects.
///
/// A context is valid only during the render pass it was handed to; using it afterwards is a
/// programmer error reported with the workflow's name. Declarations are keyed: within one pass a
/// child workflow type and key, a worker type and key, and a side-effect key may appear once each.
public final class RenderContext<WorkflowType: Workflow> {
    // Owner: the backend (node or tester) owns this context and is alive while `isValid` (inside
    // its render call); every use checks `isValid` first.
    private unowned(unsafe) let backend: any RenderContextBackend<WorkflowType>
    /// The backend when it is the runtime's node, called without reference counting. Owner: as
    /// for `backend`, used only while `isValid`.
    private let node: Unmanaged<WorkflowNode<WorkflowType>>?
    private let programmerErrors: ProgrammerErrorPolicy
    @exclusivity(unchecked) package var isValid = false

    package init(backend: any RenderContextBackend<WorkflowType>, programmerErrors: ProgrammerErrorPolicy) {
        self.backend = backend
        self.node = nil
        self.programmerErrors = programmerErrors
    }

    init(node: WorkflowNode<WorkflowType>, programmerErrors: ProgrammerErrorPolicy) {
        self.backend = node
        self.node = Unmanaged.passUnretained(node)
        self.programmerErrors = programmerErrors
    }

    /// Whether the context may be used; reports the misuse when not.
    @inline(__always)
    private func checkValid(_ use: @autoclosure () -> String) -> Bool {
        if _slowPath(!isValid) {
            programmerErrors.raise(
                "A RenderContext of \(NodePath.typeName(WorkflowType.self)) was used outside its render pass (\(use()))")
        }
        return isValid
    }

    /// A sink for actions of type `Action`, valid once this render pass completes.
    public func makeSink<Action: WorkflowAction>(of actionType: Action.Type) -> Sink<Action>
    where Action.WorkflowType == WorkflowType {
        guard checkValid("makeSink(of: \(Action.self))") else { return .recording { _ in } }
        if let node { return node._withUnsafeGuaranteedRef { $0.makeSink(of: actionType) } }
        return backend.makeSink(of: actionType)
    }

    /// Renders `child` under `key` and returns its rendering; the child's outputs become
    /// actions through `outputMap`, applied synchronously in the same cascade.
    public func render<Child: Workflow, Action: WorkflowAction>(
        _ child: Child, key: String = "", outputMap: @escaping (Child.Output) -> Action
    ) -> Child.Rendering where Action.WorkflowType == WorkflowType {
        guard checkValid("render(\(Child.self))") else { fatalError("cannot render \(Child.self) outside a render pass") }
        if let node { return node._withUnsafeGuaranteedRef { $0.render(child, key: key, outputMap: outputMap) } }
        return backend.render(child, key: key, outputMap: outputMap)
    }

    /// Renders a child that has no output.
    public func render<Child: Workflow>(_ child: Child, key: String = "") -> Child.Rendering where Child.Output == Never {
        guard checkValid("render(\(Child.self))") else { fatalError("cannot render \(Child.self) outside a render pass") }
        if let node { return node._withUnsafeGuaranteedRef { $0.render(child, key: key) } }
        return backend.render(child, key: key)
    }

    /// Runs `worker` while render passes declare it; each output becomes the action `outputMap` makes.
    public func run<W: Worker, Action: WorkflowAction>(
        _ worker: W, key: String = "", outputMap: @escaping (W.Output) -> Action
    ) where Action.WorkflowType == WorkflowType {
        guard checkValid("run(\(W.self))") else { return }
        backend.run(worker, key: key, origin: .worker, outputMap: outputMap)
    }

    /// Runs a worker whose outputs are logged with `origin` (signals use `.signal`).
    package func run<W: Worker, Action: WorkflowAction>(
        _ worker: W, key: String, origin: ActionOrigin, outputMap: @escaping (W.Output) -> Action
    ) where Action.WorkflowType == WorkflowType {
        guard checkValid("run(\(W.self))") else { return }
        backend.run(worker, key: key, origin: origin, outputMap: outputMap)
    }

    /// Runs a worker whose outputs are already actions of this workflow.
    public func run<W: Worker>(_ worker: W, key: String = "") where W.Output: WorkflowAction, W.Output.WorkflowType == WorkflowType {
        guard checkValid("run(\(W.self))") else { return }
        backend.run(worker, key: key, origin: .worker, outputMap: { $0 })
    }

    /// The service of type `T` the host was configured with (``HostConfiguration/provide(_:as:)``),
    /// or `nil`.
    public func dependency<T: Sendable>(_ type: T.Type) -> T? {
        guard checkValid("dependency(\(T.self))") else { return nil }
        return backend.dependency(ObjectIdentifier(type)) as? T
    }

    /// The host's clock (``HostConfiguration/clock``): workers that wait (a retry's backoff, an
    /// attempt's timeout) wait on it, so tests drive them with a manual clock.
    public var clock: any WorkflowClock {
        guard checkValid("clock") else { return SystemClock() }
        return backend.clock
    }

    /// The version of the marker `name` this instance takes (rule V1): the one it fixed when it
    /// first reached the marker, as its log says; version 1 where its logged entries reach the
    /// marker without having fixed it (they were written by code from before the marker); the
    /// newest ``HostConfiguration/versionMarkers`` declares when it reaches it live for the first
    /// time (logged with the entry whose render pass this is, so every replay takes the same
    /// branch). A new instance starts with the newest version of every declared marker. Branch on
    /// it to keep what old instances declared:
    ///
    /// ```swift
    /// if context.version("charge-worker") == 1 { context.run(ChargeWorker(), key: "charge") }
    /// ```
    ///
    /// A marker that is not declared is a programmer error; a version the build no longer
    /// supports stops the instance with `DurableError.Kind.unsupportedVersion`.
    public func version(_ name: String) -> Int {
        guard checkValid("version(\(name))") else { return 1 }
        guard let versions = backend.versions else {
            programmerErrors.raise("the version marker \"\(name)\" is not declared: add it to HostConfiguration.versionMarkers")
            return 1
        }
        return versions.version(name)
    }

    /// The code version the instance started under (`DurableConfiguration.codeVersion` of the
    /// build that started it); `nil` in memory or when none was configured.
    public var codeVersion: String? {
        guard checkValid("codeVersion") else { return nil }
        return backend.versions?.codeVersion
    }

    /// Reports a programmer error with this workflow's policy (for extensions of the context).
    package func programmerError(_ message: String) {
        programmerErrors.raise(message)
    }

    /// A durable timer: while render passes declare it, `action` is sent once at `deadline`
    /// (at once if the deadline has passed, e.g. after a restart). Compute the deadline from the
    /// state (set it from ``ApplyContext/now`` in an action) so that replay declares the same one.
    /// The action should change the state so that the timer is no longer declared.
    public func runTimer<Action: WorkflowAction>(key: String, fireAt deadline: WallTime, action: @escaping () -> Action)
    where Action.WorkflowType == WorkflowType {
        guard checkValid("runTimer(key: \(key))") else { return }
        backend.runTimer(key: key, deadline: deadline, action: action)
    }

    /// Runs `action` once, after the first render pass that declares `key`; its lifetime ends
    /// at the first render pass that no longer declares it. Not run during durable replay.
    public func runSideEffect(key: some Hashable & Sendable, action: @escaping (Lifetime) -> Void) {
        guard checkValid("runSideEffect") else { return }
        backend.runSideEffect(key: AnyHashable(key), action: action)
    }
}

/// The engine behind a ``RenderContext``: the runtime's node, or a tester's recorder.
package protocol RenderContextBackend<WorkflowType>: AnyObject {
    associatedtype WorkflowType: Workflow
    func makeSink<Action: WorkflowAction>(of actionType: Action.Type) -> Sink<Action> where Action.WorkflowType == WorkflowType
    func render<Child: Workflow, Action: WorkflowAction>(
        _ child: Child, key: String, outputMap: @escaping (Child.Output) -> Action
    ) -> Child.Rendering where Action.WorkflowType == WorkflowType
    func run<W: Worker, Action: WorkflowAction>(
        _ worker: W, key: String, origin: ActionOrigin, outputMap: @escaping (W.Output) -> Action
    ) where Action.WorkflowType == WorkflowType
    func runTimer<Action: WorkflowAction>(key: String, deadline: WallTime, action: @escaping () -> Action)
    where Action.WorkflowType == WorkflowType
    func render<Child: Workflow>(_ child: Child, key: String) -> Child.Rendering where Child.Output == Never
    func runSideEffect(key: AnyHashable, action: @escaping (Lifetime) -> Void)
    func dependency(_ type: ObjectIdentifier) -> (any Sendable)?
    /// The host's clock.
    var clock: any WorkflowClock { get }
    /// The versions the tree's code takes (`nil`: no marker declared, no code version).
    var versions: InstanceVersions? { get }
}

extension RenderContextBackend {
    /// The system clock, for backends that have no other.
    package var clock: any WorkflowClock { SystemClock() }
    /// No versions, for backends that have none.
    package var versions: InstanceVersions? { nil }

    /// Renders a child without output through the general path.
    package func render<Child: Workflow>(_ child: Child, key: String) -> Child.Rendering where Child.Output == Never {
        render(child, key: key, outputMap: { (never: Never) -> AnyWorkflowAction<WorkflowType> in })
    }
}

extension Workflow {
    /// Renders this workflow as a child in `context` (for workflows without output).
    public func rendered<Parent: Workflow>(in context: RenderContext<Parent>, key: String = "") -> Rendering where Output == Never {
        context.render(self, key: key)
    }
}
