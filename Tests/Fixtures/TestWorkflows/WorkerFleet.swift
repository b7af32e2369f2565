import Workflow

/// A parent rendering `children` children, each running a worker that never emits: dropping
/// children ends their nodes and their workers in the same render pass (defect 1 of issue 22).
public struct WorkerFleet: Workflow, Sendable {
    public var children: Int

    public init(children: Int) { self.children = children }

    public struct Rendering: Sendable {
        public let running: Int
    }

    public func makeInitialState() -> Void {}

    public func render(state: Void, context: RenderContext<WorkerFleet>) -> Rendering {
        for index in 0..<children { _ = context.render(Member(), key: "\(index)") }
        return Rendering(running: children)
    }

    /// One child: runs a never-ending worker.
    public struct Member: Workflow, Sendable {
        public func makeInitialState() -> Void {}
        public func render(state: Void, context: RenderContext<Member>) {
            context.run(NeverEnding(), key: "forever")
        }

        /// What the worker would emit.
        public struct Tick: WorkflowAction {
            public typealias WorkflowType = Member
            public func apply(toState state: inout Void) -> Never? { nil }
        }
    }

    /// A worker that runs until cancelled and never emits.
    public struct NeverEnding: Worker {
        public func run() -> AsyncStream<Member.Tick> { AsyncStream { _ in } }
    }
}

/// An observer that hears nothing: every hook keeps its default (the crash needed no more).
public struct SilentObserver: WorkflowObserver {
    public init() {}
}
