import DurableWorkflow
import Foundation
import Logging
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB

/// A charge that begins when asked (or at once), through a task whose value is `Reply`, and a
/// reminder worker whose outputs are `Nudge`s: the configuration a test gives decides which of
/// them it can log.
struct Gatekeeper: Workflow, Codable, Sendable {
    var chargeAtStart = false
    var remind = false

    struct Reply: Codable, Sendable, Equatable { var receipt: String }

    struct State: Codable, Equatable, Sendable {
        var charging = false
        var receipt: String?
        var nudges = 0
    }

    struct Rendering: Sendable {
        let state: State
        let begin: Sink<Begin>
    }

    struct Begin: DurableAction {
        typealias WorkflowType = Gatekeeper
        static let tag = "gatekeeper.begin"
        func apply(toState state: inout State) -> Never? {
            state.charging = true
            return nil
        }
    }

    struct Charged: DurableAction {
        typealias WorkflowType = Gatekeeper
        static let tag = "gatekeeper.charged"
        var receipt: String
        func apply(toState state: inout State) -> Never? {
            state.receipt = receipt
            state.charging = false
            return nil
        }
    }

    struct Nudge: DurableAction {
        typealias WorkflowType = Gatekeeper
        static let tag = "gatekeeper.nudge"
        func apply(toState state: inout State) -> Never? {
            state.nudges += 1
            return nil
        }
    }

    func makeInitialState() -> State { State(charging: chargeAtStart) }

    func render(state: State, context: RenderContext<Gatekeeper>) -> Rendering {
        if state.charging {
            let gateway = context.dependency(Gateway.self)
            context.runTask(key: "charge", operation: { attempt -> Reply in
                Reply(receipt: try await gateway?.charge(attempt) ?? "none")
            }) { result in Charged(receipt: (try? result.get().receipt) ?? "failed") }
        }
        if remind, state.nudges == 0 {
            context.run(AsyncOperationWorker { Nudge() }, key: "nudge") { $0 }
        }
        return Rendering(state: state, begin: context.makeSink(of: Begin.self))
    }

    /// Every action but the task's events and the nudges: what a build that forgot them logs.
    static var forgetful: ActionRegistry { ActionRegistry(Begin.self, Charged.self) }

    static var complete: ActionRegistry {
        var registry = ActionRegistry(Begin.self, Charged.self, Nudge.self)
        registry.registerTask(Reply.self)
        return registry
    }
}

@Suite("Registration checked where work is declared (rule O4): never a silent wait")
struct RegistrationTests {
    func configuration(_ actions: ActionRegistry, _ gateway: Gateway, _ log: CapturedLog) -> DurableConfiguration {
        var configuration = DurableConfiguration(actions: actions)
        configuration.host.provide(gateway)
        configuration.logger = log.logger
        return configuration
    }

    @Test("a task whose events the configuration cannot log fails the start where render declares it: typed, named, logged, the instance failed, nothing called")
    func taskAtStart() async throws {
        let dir = TemporaryDirectory("registration-start")
        let store = try WorkflowStore.open(path: dir.path)
        let gateway = Gateway([]), log = CapturedLog()
        let thrown = #expect(throws: DurableError.self) {
            try store.start(Gatekeeper(chargeAtStart: true), id: "g", configuration: configuration(Gatekeeper.forgetful, gateway, log))
        }
        let error = try #require(thrown)
        #expect(error.kind == .actionNotRegistered)
        #expect(error.actionTag == TaskWorkflow<Gatekeeper.Reply>.Event.tag)
        #expect(error.nodePath == "/Gatekeeper/TaskWorkflow<DurableWorkflowTests.Gatekeeper.Reply>[charge]" || error.nodePath?.contains("[charge]") == true,
                "\(error.nodePath ?? "-")")
        #expect(error.detail.contains("a task"), "\(error)")
        #expect(error.recovery.contains("registerTask(DurableWorkflowTests.Gatekeeper.Reply.self)"), "\(error.recovery)")
        // The attempt never started: nothing reached the gateway.
        try await Task.sleep(for: .milliseconds(50))
        #expect(gateway.calls.isEmpty)
        let failed = try #require(try store.instance(id: "g"))
        #expect(failed.status == .failed)
        #expect(failed.failure?.hasPrefix("actionNotRegistered:") == true, "\(failed.failure ?? "-")")
        let errors = log.all.filter { $0.level == .error }
        #expect(errors.contains { $0.message.contains("cannot log") && $0.metadata["action"] == "\(TaskWorkflow<Gatekeeper.Reply>.Event.tag)" },
                "\(errors)")

        // The build that registers the task resumes it, and the task runs once.
        let fixed = try store.resume(id: "g", as: Gatekeeper.self, configuration: configuration(Gatekeeper.complete, gateway, log))
        await waitUntil { fixed.rendering.state.receipt != nil }
        #expect(fixed.rendering.state.receipt == "receipt-1")
        #expect(gateway.calls.count == 1)
        #expect(try store.instance(id: "g")?.status == .running)
        await fixed.stopAndWait()
    }

    @Test("an instance that reaches a task it cannot log keeps the committed action, fails where render declares it, and its task never starts")
    func taskLater() async throws {
        let dir = TemporaryDirectory("registration-later")
        let store = try WorkflowStore.open(path: dir.path)
        let gateway = Gateway([]), log = CapturedLog()
        let host = try store.start(Gatekeeper(), id: "g", configuration: configuration(Gatekeeper.forgetful, gateway, log))
        // The action itself is logged: it is what the build reached, and it stays.
        #expect(await host.rendering.begin.sendAndWait(Gatekeeper.Begin()))
        await waitUntil { host.failure != nil }
        let failure = try #require(host.failure as? DurableError)
        #expect(failure.kind == .actionNotRegistered && failure.recovery.contains("registerTask("), "\(failure)")
        try await Task.sleep(for: .milliseconds(50))
        #expect(gateway.calls.isEmpty)
        #expect(try store.entries(of: "g").map(\.actionTag) == [LogEntry.propsTag, Gatekeeper.Begin.tag])
        #expect(try store.instance(id: "g")?.status == .failed)
        #expect(log.messages(at: .error).contains { $0.contains("cannot log") })

        let fixed = try store.resume(id: "g", as: Gatekeeper.self, configuration: configuration(Gatekeeper.complete, gateway, log))
        await waitUntil { fixed.rendering.state.receipt != nil }
        #expect(gateway.calls.count == 1)
        await fixed.stopAndWait()
    }

    @Test("a worker whose outputs become an unregistered action fails the host at its declaration, with that action's registration")
    func plainWorker() async throws {
        let store = WorkflowStore.inMemory()
        let log = CapturedLog()
        let thrown = #expect(throws: DurableError.self) {
            try store.start(Gatekeeper(remind: true), id: "w", configuration: configuration(Gatekeeper.forgetful, Gateway([]), log))
        }
        let error = try #require(thrown)
        #expect(error.kind == .actionNotRegistered)
        #expect(error.actionTag == Gatekeeper.Nudge.tag)
        #expect(error.detail.contains("the worker AsyncOperationWorker<Nudge> (key \"nudge\")"), "\(error.detail)")
        #expect(error.recovery.contains("register(Nudge.self)") || error.recovery.contains("Nudge"), "\(error.recovery)")
        #expect(try store.instance(id: "w")?.status == .failed)
    }

    @Test("a discard that loses work is logged by the engine at error level, naming the action's tag")
    func discardsAreLogged() async throws {
        let store = WorkflowStore.inMemory()
        let log = CapturedLog()
        // Begin is not registered: the send is refused and logged.
        let host = try store.start(Gatekeeper(), id: "d", configuration: configuration(ActionRegistry(Gatekeeper.Charged.self), Gateway([]), log))
        #expect(await !host.rendering.begin.sendAndWait(Gatekeeper.Begin()))
        let errors = log.all.filter { $0.level == .error && $0.message.contains("discarded") }
        #expect(errors.count == 1, "\(log.all)")
        #expect(errors.first.map { "\($0.metadata["error"] ?? "")".contains(Gatekeeper.Begin.tag) } == true, "\(errors)")
        await host.stopAndWait()
    }
}
