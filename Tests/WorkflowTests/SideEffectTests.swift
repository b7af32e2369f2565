import Testing
import Workflow

/// Runs a side effect under `key` while `key` is not nil.
struct EffectRunner: Workflow, Sendable {
    var key: String?
    let log: EventLog

    func makeInitialState() -> Void { () }

    func render(state: Void, context: RenderContext<EffectRunner>) -> Int {
        if let key {
            let log = self.log
            context.runSideEffect(key: key) { lifetime in
                log.append("effect start \(key)")
                lifetime.onEnded { log.append("effect end \(key)") }
            }
        }
        log.append("render")
        return 0
    }
}

@Suite("Side effects and child lifetimes (R5)")
struct SideEffectTests {
    @Test("a side effect starts after the render pass that declares it and ends at the first pass that does not")
    func sideEffectLifecycle() {
        let log = EventLog()
        let host = WorkflowHost(workflow: EffectRunner(key: "a", log: log))
        #expect(log.all == ["render", "effect start a"])
        host.update(workflow: EffectRunner(key: "a", log: log))
        #expect(log.all == ["render", "effect start a", "render"])  // still declared: not run again
        host.update(workflow: EffectRunner(key: "b", log: log))
        #expect(log.all.suffix(3) == ["render", "effect end a", "effect start b"])
        host.stop()
        #expect(log.all.last == "effect end b")
    }

    @Test("a child's state lives while it is rendered and resets when it is removed and added again")
    func childStateLifetime() {
        let host = WorkflowHost(workflow: Parent())
        host.rendering.child!.increment()
        host.update(workflow: Parent(showChild: true))
        #expect(host.rendering.child?.count == 1)
        host.update(workflow: Parent(showChild: false))
        host.update(workflow: Parent(showChild: true))
        #expect(host.rendering.child?.count == 0)
    }

    @Test("rendering the same child type and key twice in one pass is a programmer error naming the workflow")
    func duplicateChild() {
        struct Twins: Workflow, Sendable {
            func render(state: Void, context: RenderContext<Twins>) -> Int {
                context.render(Counter(), key: "same") { _ in AnyWorkflowAction<Twins>.noAction }.count
                    + context.render(Counter(), key: "same") { _ in AnyWorkflowAction<Twins>.noAction }.count
            }
        }
        let errors = EventLog()
        _ = WorkflowHost(workflow: Twins(), configuration: .init(programmerErrors: .report { errors.append($0) }))
        #expect(errors.all.count == 1)
        #expect(errors.all.first?.contains("Twins rendered the child") == true)
        #expect(errors.all.first?.contains("\"same\"") == true)
    }
}
