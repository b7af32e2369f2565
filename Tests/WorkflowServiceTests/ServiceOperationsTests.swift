import DurableWorkflow
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowExamples
import WorkflowLMDB
import WorkflowService

/// What a live service does for an operator without a restart (issue 59, point 5).
@Suite("WorkflowService for operators: resume by id, failed instances resumed in bulk, starts that leave the pool free", .serialized)
struct ServiceOperationsTests {
    @Test("an instance is resumed by id alone (its props are in its log) and run by the service")
    func resumeByID() async throws {
        let dir = TemporaryDirectory("service-resume-id")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(actions: DurableCounter.actions)
        let first = try store.start(DurableCounter(step: 7), id: "c", configuration: configuration)
        _ = await first.rendering.sink.sendAndWait(.init(amount: 2))
        await first.stopAndWait()

        let service = WorkflowService(store: store, adoptionInterval: nil)
        service.register(DurableCounter.self, configuration: configuration)
        let group = ServiceGroup(services: [service], logger: Logger(label: "resume-id"))
        let running = Task { try await group.run() }
        try await service.untilRunning()
        let host = try await service.resume(id: "c", as: DurableCounter.self)
        #expect(host.rendering.state.count == 14, "the props (step 7) came from the log")
        #expect(service.runningInstances == ["c"])
        #expect(try await service.resume(id: "c", as: DurableCounter.self) === host)
        await #expect(throws: DurableError.self) { try await service.resume(id: "nobody", as: DurableCounter.self) }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("1,000 failed instances resumed in bulk by wfctl, in another process, are picked up by the running service without a restart")
    func bulkResumeWithoutRestart() async throws {
        let dir = TemporaryDirectory("service-bulk-resume")
        let count = TestLoad.scaled(1_000)
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(mode: .grouped, actions: Counter.actions)
        for index in 0..<count {
            let host = try store.start(Counter(), id: "f\(index)", configuration: configuration)
            host.rendering.increment.send(.init())
            await host.stopAndWait()
            _ = try store.backend.setStatus(id: "f\(index)", to: .failed, at: WallTime.now().nanosecondsSinceEpoch,
                                            failure: "unknownActionType: a decoder the old build lacked")
        }
        let service = WorkflowService(store: store, adoptionInterval: .milliseconds(200))
        service.register(Counter.self, configuration: configuration)
        let group = ServiceGroup(services: [service], logger: Logger(label: "bulk-resume"))
        let running = Task { try await group.run() }
        try await service.untilRunning()
        #expect(service.runningInstances.isEmpty, "failed instances are not resumed at start")

        let path = ChildProcess.builtProduct("wfctl")
        let tool = try ChildProcess(["resume", dir.path, "--failed", "--kind", "unknownActionType"], executable: path, mergeStandardError: true)
        let lines = tool.readRemainingLines(timeout: .seconds(300))
        #expect(try tool.waitForExit() == 0, "\(lines.suffix(3))")
        #expect(lines.last == "\(count) of \(count) failed instance(s) resumed", "\(lines.suffix(3))")
        let deadline = ContinuousClock.now + .seconds(120)
        while service.runningInstances.count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(service.runningInstances.count == count)
        #expect(try store.instances(status: .failed).isEmpty)
        let rerun = try ChildProcess(["resume", dir.path, "--failed"], executable: path, mergeStandardError: true)
        #expect(rerun.readRemainingLines().last == "0 of 0 failed instance(s) resumed", "a rerun is a no-op")
        _ = try rerun.waitForExit()
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("2,000 concurrent async starts leave the cooperative pool free: the service notices SIGTERM within 200 ms")
    func startsLeaveThePoolFree() throws {
        let dir = TemporaryDirectory("service-starts")
        let count = TestLoad.scaled(2_000)
        let child = try ChildProcess(["service-starts", dir.path, "\(count)"], mergeStandardError: true)
        guard child.readLine(until: { $0 == "starting" || $0.hasPrefix("error") }, timeout: .seconds(60)) == "starting" else {
            Issue.record("the service did not start: \(child.diagnosis)")
            return
        }
        // The starts are under way: their first commits queue behind one another.
        usleep(50_000)
        let signalled = MachineClock.now
        child.kill(SIGTERM)
        let lines = child.readRemainingLines(timeout: .seconds(120))
        #expect(try child.waitForExit() == 0, "\(lines.suffix(3))")
        let noticed = try #require(lines.first { $0.hasPrefix("noticed ") }.flatMap { UInt64($0.dropFirst(8)) }, "\(lines.suffix(3))")
        let delay = MachineClock.duration(from: signalled, to: noticed)
        #expect(delay < .milliseconds(200), "SIGTERM was noticed \(delay) after it was sent")
        let started = try #require(lines.last { $0.hasPrefix("stopped ") }.flatMap { Int($0.dropFirst(8)) })
        #expect(started < count, "the shutdown came while starts were still under way (\(started) of \(count) started)")
    }
}
