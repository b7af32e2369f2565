import DurableWorkflow
import Foundation
import Logging
import MetricsTestKit
import ServiceLifecycle
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowService

private func counter(_ mode: DurableConfiguration.Mode = .grouped) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: DurableCounter.actions)
}

@Suite("WorkflowService: resume at start, graceful shutdown")
struct WorkflowServiceTests {
    @Test("SIGTERM during grouped load: the graceful shutdown commits every action applied before it, and releases every instance")
    func sigtermLosesNothing() throws {
        let dir = TemporaryDirectory("service-sigterm")
        let instances = 8
        let child = try ChildProcess(["service-counters", dir.path, "\(instances)"], mergeStandardError: true)
        var lines: [String] = [], ready = false
        while let line = child.readLine(timeout: .seconds(30)) {
            if line == "ready" {
                ready = true
                break
            }
            lines.append(line)
        }
        guard ready else {
            Issue.record("the service did not start: \(lines.suffix(5))")
            return
        }
        let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 300...800))
        while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) { lines.append(line) }
        child.kill(SIGTERM)
        lines += child.readRemainingLines(timeout: .seconds(30))
        #expect(try child.waitForExit() == 0, "\(lines.suffix(5))")
        #expect(lines.contains("stopped stopped"), "\(lines.suffix(5))")

        var applied = [Int](repeating: 0, count: instances)
        for line in lines where line.hasPrefix("applied ") {
            guard let amount = Int(line.dropFirst(8)) else { continue }
            let (n, index) = (amount / 1000, amount % 1000)
            #expect(n == applied[index] + 1, "instance \(index): \(n) applied after \(applied[index])")
            applied[index] = n
        }
        #expect(applied.allSatisfy { $0 > 0 }, "\(applied)")
        let store = try WorkflowStore.open(path: dir.path)
        for index in 0..<instances {
            // Resumable at once: the shutdown released it.
            let host = try store.resume(id: "t\(index)", as: DurableCounter.self, configuration: counter())
            let n = applied[index]
            #expect(host.rendering.state.applied == n, "instance \(index): \(host.rendering.state.applied) in the log, \(n) applied")
            #expect(host.rendering.state.count == 1000 * n * (n + 1) / 2 + index * n)
            host.stop()
        }
    }

    @Test("run() resumes the registered types' instances, marks an unreplayable one failed, runs what starts through it, forgets what finishes, and stops and releases everything at shutdown")
    func lifecycle() async throws {
        let dir = TemporaryDirectory("service-lifecycle")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for id in ["a", "b"] {
                let host = try store.start(DurableCounter(), id: id, configuration: counter(.strict))
                host.rendering.sink.send(.init(amount: 2))
                await host.stopAndWait()
            }
            let good = try store.entries(of: "a")
            let bad = LogEntry(sequence: 2, time: good[1].time, origin: good[1].origin, nodePath: good[1].nodePath,
                               actionTag: good[1].actionTag, actionVersion: 9, payload: good[1].payload, digest: nil)
            try store.importInstance(id: "bad", workflowType: String(reflecting: DurableCounter.self), status: .running, created: .now(),
                                     entries: [good[0], bad])
        }
        let metrics = TestMetrics()
        let store = WorkflowStore(backend: try LMDBStorage.open(path: dir.path), metricsFactory: metrics)
        let service = WorkflowService(store: store, logger: Logger(label: "test"), instanceCountsInterval: .milliseconds(5))
        service.register(DurableCounter.self, configuration: counter())
        service.register(Checkout.self, configuration: DurableConfiguration(mode: .grouped, actions: Checkout.actions))
        #expect(throws: WorkflowServiceError.self) { _ = try service.start(DurableCounter(), id: "early") }
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        while service.state != .running { try await Task.sleep(for: .milliseconds(2)) }

        #expect(service.runningInstances == ["a", "b"])
        #expect(try store.instances(status: .failed).map(\.id) == ["bad"])
        // The instance gauges, set while the service runs.
        let gauge = { (status: String) in try? metrics.expectGauge("workflow_instances", [("store", store.path), ("status", status)]).lastValue }
        let deadline = ContinuousClock.now + .seconds(10)
        while (gauge("running") != 2 || gauge("failed") != 1), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(gauge("running") == 2 && gauge("failed") == 1)
        let a = try #require(service.host(id: "a", as: DurableCounter.self))
        #expect(a.rendering.state.count == 2)
        #expect(try await service.startOrResume(DurableCounter(), id: "a") === a)
        a.rendering.sink.send(.init(amount: 5))

        let checkout = try await service.start(Checkout(total: 1), id: "order", with: Checkout.Open(items: 1))
        #expect(service.runningInstances == ["a", "b", "order"])
        try await checkout.rendering.pay.sendAndCommit(.init(amount: 1))
        #expect(try await checkout.completion == .receipt(.init(items: 1, paid: 1)))
        await checkout.stopAndWait()
        #expect(service.runningInstances == ["a", "b"])
        #expect(throws: WorkflowServiceError.self) { _ = try service.start(HashlessCounter(), id: "unregistered") }

        // Concurrent startOrResume calls for one new id all get the one host that runs it.
        let hosts = await withTaskGroup(of: WorkflowHost<DurableCounter>?.self) { group in
            for _ in 0..<8 { group.addTask { try? service.startOrResume(DurableCounter(), id: "shared") } }
            var hosts: [WorkflowHost<DurableCounter>?] = []
            for await host in group { hosts.append(host) }
            return hosts
        }
        let first = try #require(hosts.first ?? nil)
        #expect(hosts.allSatisfy { $0 === first }, "\(hosts.map { $0 == nil ? "nil" : "host" })")
        #expect(service.runningInstances == ["a", "b", "shared"])

        await group.triggerGracefulShutdown()
        try await running.value
        #expect(service.state == .stopped)
        #expect(service.runningInstances.isEmpty)
        #expect(throws: WorkflowServiceError.self) { _ = try service.start(DurableCounter(), id: "late") }
        // Everything was committed and released: another store value resumes each instance.
        let after = try WorkflowStore.open(path: dir.path)
        let resumed = try after.resume(id: "a", as: DurableCounter.self, configuration: counter())
        #expect(resumed.rendering.state.count == 7)
        await resumed.stopAndWait()
        #expect(try after.instance(id: "order")?.status == .completed)
    }
}

/// A durable root type no service registers.
struct HashlessCounter: Workflow, Codable, Sendable {
    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<HashlessCounter>) -> Int { state }
}
