import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowLMDB
import WorkflowSignals

/// Waits for every version of `signal` until told to give up.
private struct Abandoning: Workflow, Codable, Sendable {
    let signal: SignalID

    struct State: Codable, Equatable, Sendable {
        var waiting = true
        var received: [String] = []
    }

    struct GiveUp: DurableAction {
        typealias WorkflowType = Abandoning
        static let tag = "abandoning.give-up"
        func apply(toState state: inout State) -> Never? {
            state.waiting = false
            return nil
        }
    }

    struct Got: DurableAction {
        typealias WorkflowType = Abandoning
        static let tag = "abandoning.got"
        let value: String
        func apply(toState state: inout State) -> Never? {
            state.received.append(value)
            return nil
        }
    }

    struct Rendering: Sendable {
        let state: State
        let giveUp: Sink<GiveUp>
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<Abandoning>) -> Rendering {
        if state.waiting {
            context.awaitSignal(signal, behaviour: .untilTerminated) { delivery in Got(value: (try? delivery.decode(String.self)) ?? "?") }
        }
        return Rendering(state: state, giveUp: context.makeSink(of: GiveUp.self))
    }
}

/// Serialized: each test waits with `eventually`, which blocks its thread; run side by side on a
/// two-core machine, the two tests held both threads of Swift's cooperative pool, and the hosts'
/// tasks that register the waits' consumers never ran.
@Suite("The lifetime of a workflow's signal wait", .serialized)
struct WaitLifetimeTests {
    @Test("a durable wait keeps its consumer across a host stop and removes it when the workflow stops waiting")
    func durableWait() throws {
        let dir = TemporaryDirectory("wait-lifetime")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "service")
        let signal = SignalID()
        var configuration = DurableConfiguration(actions: ActionRegistry(Abandoning.GiveUp.self, Abandoning.Got.self))
        configuration.host.provide(center)
        let host = try center.store.start(Abandoning(signal: signal), id: "a", configuration: configuration)
        #expect(eventually { (try? center.consumers(of: signal).count) == 1 })
        try center.post(signal, value: "first", terminatesConsumersAfterDelivery: false)
        #expect(eventually { host.rendering.state.received == ["first"] })
        host.stop()
        #expect(try center.consumers(of: signal).count == 1)  // the resumed host needs it

        let resumed = try center.store.resume(id: "a", as: Abandoning.self, configuration: configuration)
        try center.post(signal, value: "second", terminatesConsumersAfterDelivery: false)
        #expect(eventually { resumed.rendering.state.received == ["first", "second"] })
        #expect(try center.consumers(of: signal).count == 1)
        resumed.rendering.giveUp.send(.init())
        #expect(eventually { (try? center.consumers(of: signal).isEmpty) == true })
        #expect(try center.signals().allSatisfy { $0.id != signal })  // no consumer left: the record went too
        try center.post(signal, value: "third", terminatesConsumersAfterDelivery: false)
        usleep(100_000)
        #expect(resumed.rendering.state.received == ["first", "second"])
        resumed.stop()
        #expect(try center.store.entries(of: "a").map(\.origin) == [.props, .signal, .signal, .sink])
    }

    @Test("an in-memory wait's consumer goes when its host stops")
    func inMemoryWait() throws {
        let dir = TemporaryDirectory("wait-lifetime-memory")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "service")
        let signal = SignalID()
        var configuration = HostConfiguration()
        configuration.provide(center)
        let host = WorkflowHost(workflow: Abandoning(signal: signal), configuration: configuration)
        #expect(eventually { (try? center.consumers(of: signal).count) == 1 })
        host.stop()
        #expect(eventually { (try? center.consumers(of: signal).isEmpty) == true })
    }
}
