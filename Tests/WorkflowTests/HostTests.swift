import Synchronization
import Testing
import TestSupport
import TestWorkflows
import Workflow

@Suite("Host: observation, props, outputs, re-entrancy (R3, R6, R7)")
struct HostTests {
    @Test("renderings() yields the current rendering exactly once, then exactly one per render pass")
    func renderingStream() async {
        let host = WorkflowHost(workflow: Counter())
        host.rendering.increment()
        let stream = host.renderings()
        for _ in 0..<3 { host.rendering.increment() }
        host.stop()
        var seen: [Int] = []
        for await rendering in stream { seen.append(rendering.count) }
        #expect(seen == [1, 2, 3, 4])
    }

    @Test("observeRenderings calls back with the current rendering once, then once per pass, until cancelled")
    func renderingCallback() {
        let host = WorkflowHost(workflow: Counter())
        let seen = Locked<[Int]>([])
        let observation = host.observeRenderings { rendering in seen.value.append(rendering.count) }
        host.rendering.increment()
        host.rendering.increment()
        observation.cancel()
        host.rendering.increment()
        #expect(seen.value == [0, 1, 2])
    }

    @Test("a props update runs workflowDidChange, then exactly one render pass")
    func propsUpdate() {
        struct Props: Workflow, Sendable {
            var value: Int
            let log: EventLog
            func makeInitialState() -> Int { value }
            func workflowDidChange(from previous: Props, state: inout Int) {
                log.append("didChange \(previous.value)->\(value)")
                state = value * 100
            }
            func render(state: Int, context: RenderContext<Props>) -> Int {
                log.append("render \(state)")
                return state
            }
        }
        let log = EventLog()
        let host = WorkflowHost(workflow: Props(value: 1, log: log))
        host.update(workflow: Props(value: 2, log: log))
        #expect(log.all == ["render 1", "didChange 1->2", "render 200"])
        #expect(host.rendering == 200)
    }

    @Test("root outputs reach the host's outputs in order")
    func outputsInOrder() async {
        let host = WorkflowHost(workflow: Counter())
        for _ in 0..<3 {
            host.rendering.increment()
            host.rendering.sink.send(.emit)
        }
        host.stop()
        var outputs: [Int] = []
        for await output in host.outputs { outputs.append(output) }
        #expect(outputs == [1, 2, 3])
    }

    @Test("a send made from inside an action's apply is queued and applied right after, with its own render pass")
    func sendDuringApplyIsQueued() {
        let log = EventLog()
        let sink = Locked<Sink<Counter.Action>?>(nil)
        struct Resender: WorkflowObserver {
            let sink: Locked<Sink<Counter.Action>?>
            let log: EventLog
            func actionWillApply(_ event: ActionEvent) -> ((Any, Any?) -> Void)? {
                // While the first action is being applied, send another one.
                if (event.stateBefore as? Int) == 0 { sink.value?.send(.increment) }
                return { after, _ in log.append("applied ->\(after)") }
            }
            func renderPassWillStart() -> ((Duration) -> Void)? { { _ in log.append("render") } }
        }
        let host = WorkflowHost(workflow: Counter(), configuration: .init(observers: [Resender(sink: sink, log: log)]))
        sink.value = host.rendering.sink
        host.rendering.increment()
        #expect(host.rendering.count == 2)
        #expect(log.all == ["render", "applied ->1", "render", "applied ->2", "render"])
    }

    @Test("a send during a render pass is a programmer error naming the workflow, and is not lost")
    func sendDuringRender() {
        let errors = EventLog()
        let host = WorkflowHost(workflow: SendsDuringRender(), configuration: .init(programmerErrors: .report { errors.append($0) }))
        host.update(workflow: SendsDuringRender(sendNow: true))
        #expect(errors.all.count == 1)
        #expect(errors.all.first?.contains("SendsDuringRender") == true)
        #expect(host.rendering.count >= 1)
    }

    @Test("a send during a render pass stops the process by default, with a message naming the workflow")
    func sendDuringRenderTraps() throws {
        // The trap is expected: no backtrace for it. Under the sanitizers the runtime's backtracer
        // could hang after the child died, holding the test runner's output open (seen with
        // ThreadSanitizer: the whole run waited until it was killed).
        let child = try ChildProcess(["workflow-send-during-render"], environment: ["SWIFT_BACKTRACE": "enable=no"], mergeStandardError: true)
        let output = child.readRemainingLines().joined(separator: "\n")
        let status = try child.waitForExit()
        #expect(status != 0)
        #expect(output.contains("was sent during a render pass of"), "child said: \(output)")
        #expect(output.contains("SendsDuringRender"))
    }
}
