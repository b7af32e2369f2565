import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowTesting

/// A task value that names itself: its events are logged as `workflow.task<names.reply>`.
struct NamedReply: Codable, Sendable, Equatable, NamedTaskValue {
    static let taskName = "names.reply"
    var text: String
}

/// A root whose one task returns a `NamedReply`.
struct Replying: Workflow, Codable, Sendable {
    struct State: Codable, Equatable, Sendable { var reply: String? }
    struct Done: DurableAction {
        typealias WorkflowType = Replying
        static let tag = "replying.done"
        var text: String
        func apply(toState state: inout State) -> Never? {
            state.reply = text
            return nil
        }
    }
    func makeInitialState() -> State { State() }
    func render(state: State, context: RenderContext<Replying>) -> State {
        if state.reply == nil {
            let gateway = context.dependency(Gateway.self)
            context.runTask(key: "ask", operation: { attempt in NamedReply(text: try await gateway?.charge(attempt) ?? "-") }) {
                Done(text: (try? $0.get().text) ?? "failed")
            }
        }
        return state
    }
    static var actions: ActionRegistry {
        var registry = ActionRegistry(Done.self)
        registry.registerTask(NamedReply.self)
        return registry
    }
}

@Suite("Names that last (issue 59, point 7): node paths, idempotency keys with the incarnation, task tags; old logs read unchanged")
struct NamesTests {
    func configuration(_ gateway: Gateway, clock: ManualClock? = nil) -> DurableConfiguration {
        var configuration = DurableConfiguration(actions: Payment.actions)
        configuration.host.provide(gateway)
        if let clock { configuration.host.clock = clock }
        return configuration
    }

    @Test("a task's node is named by its full generic type, and its idempotency key begins with the instance's id and incarnation")
    func readableNames() async throws {
        let store = WorkflowStore.inMemory()
        let gateway = Gateway([])
        let host = try store.start(Payment(), id: "p", configuration: configuration(gateway))
        await waitUntil { host.rendering.state.receipt != nil }
        let created = try #require(try store.instance(id: "p")).created.nanosecondsSinceEpoch
        let key = try #require(gateway.calls.first?.idempotencyKey)
        #expect(key == "p~\(String(UInt64(created), radix: 36))/Payment/TaskWorkflow<String>[charge]#attempts@1", "\(key)")
        let nodes = try store.entries(of: "p").map(\.nodePath.description)
        #expect(nodes.contains("/Payment/TaskWorkflow<String>[charge]"), "\(nodes)")
        await host.stopAndWait()
    }

    @Test("an id deleted and started again gets idempotency keys of its own: a service that dedupes by key does not answer it with the old result")
    func newIncarnationNewKeys() async throws {
        let dir = TemporaryDirectory("names-incarnation")
        let store = try WorkflowStore.open(path: dir.path)
        let gateway = Gateway([])
        for _ in 0..<2 {
            let host = try store.start(Payment(), id: "p", configuration: configuration(gateway))
            await waitUntil { host.rendering.state.receipt != nil }
            await host.stopAndWait()
            try store.delete(id: "p")
            try await Task.sleep(for: .milliseconds(2))
        }
        let keys = gateway.calls.compactMap(\.idempotencyKey)
        #expect(keys.count == 2 && Set(keys).count == 2, "\(keys)")
        #expect(keys.allSatisfy { $0.hasPrefix("p~") && $0.hasSuffix("/Payment/TaskWorkflow<String>[charge]#attempts@1") })
    }

    @Test("an instance the build before issue 59 wrote keeps its names: its digests verify, and its task goes on under the key it had")
    func legacyLogsReadUnchanged() async throws {
        let dir = TemporaryDirectory("names-legacy")
        let store = try WorkflowStore.open(path: dir.path)
        let clock = ManualClock()
        let gateway = Gateway([.fail(.init(code: 1)), .succeed])
        var old = configuration(gateway, clock: clock)
        old.pathNaming = .legacy
        let first = try store.start(Payment(), id: "p", configuration: old)
        await waitUntil { first.rendering.progress?.failedAttempts == 1 }
        await first.stopAndWait()
        #expect(try store.entries(of: "p").first?.notes.versionMarkers.isEmpty == true, "as the build before wrote it")
        #expect(gateway.calls.first?.idempotencyKey == "p/Payment/String>[charge]#attempts@1")

        // This build resumes it: the log's digests (over the legacy names) compare equal, and
        // the retry runs under the same key.
        #expect(try store.verify(id: "p", as: Payment.self, configuration: configuration(gateway)).isConsistent)
        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration(gateway, clock: clock))
        clock.advance(by: .seconds(5))
        await waitUntil { resumed.rendering.state.receipt != nil }
        #expect(gateway.calls.map(\.idempotencyKey) == ["p/Payment/String>[charge]#attempts@1", "p/Payment/String>[charge]#attempts@1"])
        let waits = try store.state(of: "p", as: Payment.self, configuration: configuration(gateway)).waits
        #expect(waits.isEmpty)
        await resumed.stopAndWait()
    }

    @Test("a task value that names itself logs its events under that name; entries under its module-qualified tag still read")
    func namedTaskTag() async throws {
        let store = WorkflowStore.inMemory()
        let gateway = Gateway([])
        var configuration = DurableConfiguration(actions: Replying.actions)
        configuration.host.provide(gateway)
        let host = try store.start(Replying(), id: "r", configuration: configuration)
        await waitUntil { host.rendering.reply != nil }
        await host.stopAndWait()
        let entries = try store.entries(of: "r")
        #expect(entries.map(\.actionTag).contains("workflow.task<names.reply>"), "\(entries.map(\.actionTag))")

        // The same log as a build before the type named itself wrote it.
        let qualified = "workflow.task<\(String(reflecting: NamedReply.self))>"
        let renamed = entries.map { entry in
            LogEntry(sequence: entry.sequence, time: entry.time, origin: entry.origin, nodePath: entry.nodePath,
                     actionTag: entry.actionTag == "workflow.task<names.reply>" ? qualified : entry.actionTag,
                     actionVersion: entry.actionVersion, payload: entry.payload, digest: entry.digest, notes: entry.notes)
        }
        try store.importInstance(id: "old", workflowType: Replying.workflowName, status: .running, created: .now(), entries: renamed)
        #expect(try store.entries(of: "old").map(\.actionTag).contains(qualified))
        let state = try store.state(of: "old", as: Replying.self, configuration: configuration).rootState(as: Replying.State.self)
        #expect(state.reply == "receipt-1")
    }
}
