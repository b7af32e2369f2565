import Synchronization
import WorkflowLocks

extension WorkflowRuntime {
    // MARK: Replay

    /// Applies logged entries during init, on the init thread (the drainer).
    struct Replayer: ReplayDriver {
        // Owner: the runtime's init makes this driver and runs replay with it before returning;
        // the runtime holds its context.
        unowned(unsafe) let runtime: WorkflowRuntime
        unowned(unsafe) let context: RuntimeContext

        init(runtime: WorkflowRuntime) {
            self.runtime = runtime
            self.context = runtime.context
        }

        var tree: any RuntimeTree { context }

        func apply<Action: WorkflowAction>(
            _ action: Action, at path: NodePath, origin: ActionOrigin, time: WallTime, sequence: UInt64
        ) throws(ReplayMismatch) {
            guard let found = context.node(at: path) else { throw .noNode(path) }
            guard found.workflowTypeID == ObjectIdentifier(Action.WorkflowType.self) else {
                throw .wrongWorkflowType(path, expected: NodePath.typeName(Action.WorkflowType.self))
            }
            let node = unsafeDowncast(found as AnyObject, to: WorkflowNode<Action.WorkflowType>.self)
            context.currentTime = time
            context.replayingSequence = sequence
            runtime.setPhase(.applying)
            node.apply(action, origin: origin)
            context.discardLastApplied()
            context.currentSequence = sequence
            runtime.renderPass()
        }

        func control(_ effect: ControlEntryEffect, number: UInt64, time: WallTime, sequence: UInt64) {
            context.currentTime = time
            context.replayingSequence = sequence
            context.currentSequence = sequence
            if number != 0 { context.control.lastRequest = max(context.control.lastRequest, number) }
            switch effect {
            case .pause:
                context.control.paused = true
            case .unpause:
                context.control.paused = false
            case .cancel(let request):
                context.control.cancellation = request
                runtime.setPhase(.applying)
                runtime.root.deliverCancellation(request)
                context.discardLastApplied()
                runtime.renderPass()
            case .end(let ending):
                runtime.ending = ending
                if !runtime.finished { runtime.finish = .recorded(through: sequence) }
            }
        }

        func restoreControl(_ state: ControlState) {
            context.control = state
        }

        func acknowledged(through: UInt64, sequence: UInt64) {
            context.acknowledgedThrough = max(context.acknowledgedThrough, through)
            context.currentSequence = sequence
        }

        func updateRoot(props: any Sendable, time: WallTime, sequence: UInt64) throws(ReplayMismatch) {
            guard let workflow = props as? Root else { throw .wrongPropsType("\(type(of: props))") }
            context.currentTime = time
            runtime.root.update(workflow: workflow)
            context.currentSequence = sequence
            runtime.renderPass()
        }
    }
}
