import Testing
import Workflow
import WorkflowTesting

@Suite("Testing library: render and action testers")
struct TestingLibraryTests {
    @Test("the action tester applies actions to a state without a runtime")
    func actionTester() throws {
        try Counter.Action.increment
            .tester(withState: 0, props: Counter(step: 2))
            .assert(state: 2)
            .assertNoOutput()
            .send(Counter.Action.emit)
            .assert(output: 2)
    }

    @Test("the action tester's failure says what was expected")
    func actionTesterFailure() {
        let error = #expect(throws: WorkflowTestFailure.self) {
            try Counter.Action.increment.tester(withState: 0, props: Counter()).assert(state: 5)
        }
        #expect(error?.message == "expected state 5, got 1")
    }

    @Test("the render tester serves expected child renderings and applies the child's output action")
    func renderTesterChild() throws {
        let childRendering = Counter.Rendering(count: 4, sink: .recordingForTests())
        try Parent().renderTester(initialState: 1)
            .expectWorkflow(type: Counter.self, key: "c", producingRendering: childRendering, producingOutput: 4)
            .render { rendering in #expect(rendering.total == 5) }
            .verifyAction(type: Parent.ChildEmitted.self) { #expect($0.value == 4) }
            .assert(state: 11)
    }

    @Test("the render tester records actions sent through sinks in the rendering")
    func renderTesterSink() throws {
        try Counter().renderTester(initialState: 3)
            .render { rendering in
                #expect(rendering.count == 3)
                rendering.increment()
            }
            .verifyAction(type: Counter.Action.self) { #expect($0 == .increment) }
            .assert(state: 4)
    }

    @Test("the render tester fails on an unexpected worker and on an unmet expectation")
    func renderTesterStrictness() {
        #expect(throws: WorkflowTestFailure.self) {
            try Collector(worker: IdleWorker()).renderTester().render()
        }
        #expect(throws: WorkflowTestFailure.self) {
            try Counter().renderTester().expectSideEffect(key: "never").render()
        }
        #expect(throws: Never.self) {
            try Collector(worker: IdleWorker()).renderTester()
                .expectWorker(type: IdleWorker.self, key: "w", producingOutput: 9)
                .render()
                .assert(state: [9])
        }
    }
}

extension Sink {
    /// A sink that drops what it is sent, for building expected renderings in tests.
    static func recordingForTests() -> Sink { .recording { _ in } }
}
