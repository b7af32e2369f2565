import Testing
import Workflow

@Suite("Sinks and the action cascade (R1, R2, R4)")
struct SinkTests {
    @Test("a sink send applies, cascades and re-renders before send returns")
    func sendIsSynchronous() {
        let host = WorkflowHost(workflow: Counter())
        host.rendering.increment()
        #expect(host.rendering.count == 1)
    }

    @Test("two sends in a row are two applies and two render passes, none dropped")
    func twoSendsInARow() {
        let log = EventLog()
        let host = WorkflowHost(workflow: Counter(), configuration: .init(observers: [RecordingObserver(log: log)]))
        let rendering = host.rendering
        rendering.increment()
        rendering.increment()
        #expect(host.rendering.count == 2)
        #expect(log.count { $0 == "render" } == 3)  // initial + one per send
        #expect(log.count { $0.hasPrefix("apply") } == 2)
    }

    @Test("a sink kept from two render passes ago still delivers to its node")
    func staleSinkStillDelivers() {
        let host = WorkflowHost(workflow: Counter())
        let old = host.rendering
        host.rendering.increment()
        host.rendering.increment()
        old.increment()
        #expect(host.rendering.count == 3)
    }

    @Test("a child's output cascades synchronously: child +1 and parent +10 read 11 right after one send")
    func childOutputCascade() {
        let host = WorkflowHost(workflow: Parent())
        let child = host.rendering.child!
        child.sink.send(.increment)
        child.sink.send(.emit)
        #expect(host.rendering.total == 11)
    }

    @Test("a send to a node that has ended is not applied, is reported, and does not crash")
    func sendToEndedNode() {
        let log = EventLog()
        let host = WorkflowHost(workflow: Parent(), configuration: .init(observers: [RecordingObserver(log: log)]))
        let childSink = host.rendering.child!.sink
        host.update(workflow: Parent(showChild: false))
        #expect(log.all.contains("end /Parent/Counter[c]"))
        childSink.send(.increment)
        #expect(log.all.contains("discarded nodeEnded Action"))
        host.update(workflow: Parent(showChild: true))
        #expect(host.rendering.child?.count == 0)  // a new node with fresh state
    }

    @Test("a send of an action type the latest render no longer declares is reported, not applied")
    func undeclaredActionType() {
        let log = EventLog()
        let host = WorkflowHost(workflow: Bumper(offersBump: true), configuration: .init(observers: [RecordingObserver(log: log)]))
        let bump = host.rendering.bump!
        bump.send(Bumper.Bump())
        #expect(host.rendering.value == 100)
        host.update(workflow: Bumper(offersBump: false))
        bump.send(Bumper.Bump())
        #expect(host.rendering.value == 100)
        #expect(log.all.contains("discarded actionTypeNotDeclared Bump"))
        host.update(workflow: Bumper(offersBump: true))
        bump.send(Bumper.Bump())
        #expect(host.rendering.value == 200)
    }

    @Test("sendAndWait returns after the action was applied and rendered")
    func sendAndWait() async {
        let host = WorkflowHost(workflow: Counter())
        let applied = await host.rendering.sink.sendAndWait(.increment)
        #expect(applied)
        #expect(host.rendering.count == 1)
    }

    @Test("props from the parent reach actions through the apply context")
    func propsInApplyContext() {
        let host = WorkflowHost(workflow: Counter(step: 5))
        host.rendering.increment()
        #expect(host.rendering.count == 5)
    }

    @Test("sends from 8 threads at once are all applied, each with its own render pass")
    func concurrentSends() async {
        let log = EventLog()
        let host = WorkflowHost(workflow: Counter(), configuration: .init(observers: [RecordingObserver(log: log)]))
        let sink = host.rendering.sink
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<500 { sink.send(.increment) } }
            }
        }
        _ = await sink.sendAndWait(.increment)
        #expect(host.rendering.count == 4001)
        #expect(log.count { $0 == "render" } == 4002)
    }
}
