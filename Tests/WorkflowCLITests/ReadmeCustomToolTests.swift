import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowCLI
import WorkflowExamples
import WorkflowFeedback
import WorkflowLMDB
import WorkflowSignals

// BEGIN README custom-wfctl
/// The root workflow types a service's own `wfctl` can rebuild, each with the configuration its
/// instances run with. In the tool's main.swift: `WorkflowTool.main(types: serviceTypes())`.
func serviceTypes() -> WorkflowTypes {
    var types = WorkflowTypes()
    // A plain workflow: its actions (and codec, if not the default).
    types.register(Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
    // A workflow with tasks: their actions too (`registerTask`, once per value type).
    types.register(Payment.self, configuration: DurableConfiguration(actions: Payment.actions))
    // A workflow that awaits signals: a configuration made for the store, providing its SignalCenter.
    types.register(UploadJob.self) { store in
        UploadJob.configuration(center: try SignalCenter.open(store: store, processIdentity: "wfctl"))
    }
    // A durable feedback loop: its root type and configuration.
    types.register(FeedbackLoop<Tally>.Root.self, configuration: FeedbackLoop<Tally>.durableConfiguration())
    return types
}
// END README custom-wfctl

@Suite("README custom wfctl example")
struct ReadmeCustomToolTests {
    @Test("a custom tool registering every workflow shape verifies, rebuilds and describes instances of each")
    func everyShape() async throws {
        let dir = TemporaryDirectory("custom-wfctl")
        weak var released: WorkflowStore?
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "service")
            let store = center.store
            released = store
            let counter = try store.start(Counter(), id: "counter", configuration: DurableConfiguration(actions: Counter.actions))
            counter.rendering.increment.send(.init())
            await counter.stopAndWait()

            var payments = DurableConfiguration(actions: Payment.actions)
            payments.host.provide(Gateway([.succeed]))
            let payment = try store.start(Payment(), id: "payment", configuration: payments)
            #expect(await eventually { payment.rendering.state.receipt != nil })
            await payment.stopAndWait()

            let job = try store.start(UploadJob(job: "j", files: [:], confirmation: SignalID(), holdSeconds: 3600), id: "job",
                                      configuration: UploadJob.configuration(center: center))
            job.rendering.begin.send(.init())
            await job.stopAndWait()

            let loop = try FeedbackLoop.durable(store: store, id: "tally", reducer: Tally())
            loop.start()
            #expect(await loop.sendAndWait(.add(5)))
            await loop.stopAndWait()
            try center.stop()
        }
        // In this process the tool opens the store read-only, which it may only once the service's
        // store is gone. A stopped host cancels its workers' tasks without waiting for them, and
        // the upload job's workers hold the signal center (and so the store) until the cooperative
        // pool runs their cancellation: with other tests blocking its threads, that can take a while.
        #expect(await eventually(timeout: .seconds(60)) { released == nil }, "the service's store was let go")
        let types = serviceTypes()
        #expect(WorkflowTool.run(types: types, arguments: ["verify", dir.path]) == 0)
        for id in ["counter", "payment", "job", "tally"] {
            #expect(WorkflowTool.run(types: types, arguments: ["state", dir.path, id, "--json"]) == 0, "\(id)")
            #expect(WorkflowTool.run(types: types, arguments: ["describe", dir.path, id]) == 0, "\(id)")
        }
    }

    @Test("the README shows exactly the example this file compiles")
    func readmeMatchesThisFile() throws {
        let (source, readme) = try ReadmeBlock.pair(named: "custom-wfctl", testFile: #filePath)
        #expect(source != nil && readme == source)
    }
}

/// Polls `condition` for up to `timeout`.
private func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}
