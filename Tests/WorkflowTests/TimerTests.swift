import TestWorkflows
import Testing
import Workflow
import WorkflowTesting

@Suite("Timers with an injected clock")
struct TimerTests {
    @Test("a timer fires once, at its deadline, with the clock's time, and not before")
    func firesAtDeadline() async {
        let clock = ManualClock()
        let start = clock.now()
        let host = WorkflowHost(workflow: Reminder(), configuration: .init(clock: clock))
        host.rendering.sink.send(.start(delaySeconds: 30))
        #expect(host.rendering.state.deadline == start + .seconds(30))
        await waitUntil { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(29))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(host.rendering.state.firedAt == nil)
        clock.advance(by: .seconds(1))
        let fired = await waitForRendering(host) { $0.state.firedAt != nil }
        #expect(fired?.state.firedAt == start + .seconds(30))
        #expect(fired?.state.deadline == nil)
    }

    @Test("the render tester checks timer declarations and can fire them")
    func renderTesterTimer() throws {
        let now = WallTime(nanosecondsSinceEpoch: 5_000_000_000)
        try Reminder().renderTester(initialState: .init(deadline: now))
            .at(now + .seconds(1))
            .expectTimer(key: "reminder", deadline: now, firing: true)
            .render()
            .assert(state: .init(deadline: nil, firedAt: now + .seconds(1)))
    }
}

/// Waits (polling every millisecond, bounded) until `condition` holds.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + timeout
    while !condition() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
}
