import Testing
import Workflow
import WorkflowTesting

/// Sets a reminder `delay` after `start` (using the action's logged time) and records when it fired.
struct Reminder: Workflow, Sendable {
    struct State: Equatable, Codable {
        var deadline: WallTime?
        var firedAt: WallTime?
    }

    struct Rendering: Sendable {
        let state: State
        let sink: Sink<Action>
    }

    enum Action: WorkflowAction, Equatable {
        typealias WorkflowType = Reminder
        case start(delaySeconds: Int)
        case fire

        func apply(toState state: inout State, context: ApplyContext<Reminder>) -> Never? {
            switch self {
            case .start(let delay): state.deadline = context.now + .seconds(delay)
            case .fire:
                state.firedAt = context.now
                state.deadline = nil
            }
            return nil
        }
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<Reminder>) -> Rendering {
        if let deadline = state.deadline {
            context.runTimer(key: "reminder", fireAt: deadline) { Action.fire }
        }
        return Rendering(state: state, sink: context.makeSink(of: Action.self))
    }
}

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
