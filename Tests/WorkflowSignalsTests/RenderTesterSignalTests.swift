import DurableWorkflow
import TestWorkflows
import Testing
import Workflow
import WorkflowSignals
import WorkflowTesting

/// Render tests of workflows that await signals (issue 59, point 10).
@Suite("RenderTester: signal waits are expected, and their deliveries applied")
struct RenderTesterSignalTests {
    @Test("a state that awaits a signal renders under the expectation of its wait; a delivery becomes the workflow's action")
    func expectSignal() throws {
        let center = try SignalCenter.open(store: WorkflowStore.inMemory(), processIdentity: "render-test")
        defer { try? center.stop() }
        let signal = SignalID(stableName: "tally")
        try SignalTally(signal: signal).renderTester()
            .providing(center)
            .expectSignal(signal, producing: 7)
            .render()
            .assert(state: .init(count: 1, sum: 7))
        try SignalTally(signal: signal).renderTester(initialState: .init(count: 2, sum: 5))
            .providing(center)
            .expectSignal(signal)
            .render()
            .assertNoAction()
            .assert(state: .init(count: 2, sum: 5))
        // Unexpected, or expected for another signal: the test says which wait it found.
        #expect(throws: WorkflowTestFailure.self) { try SignalTally(signal: signal).renderTester().providing(center).render() }
        #expect(throws: WorkflowTestFailure.self) {
            try SignalTally(signal: signal).renderTester().providing(center).expectSignal(SignalID(stableName: "other")).render()
        }
    }
}
