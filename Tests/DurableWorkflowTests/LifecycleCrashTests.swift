import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

@Suite("Lifecycle crashes: a process starting and finishing instances, killed with SIGKILL")
struct LifecycleCrashTests {
    @Test(
        "killed while 8 tasks start and finish checkouts: no instance is left without its first action, every finish acknowledged is completed in the store, and the rest finish after resumeAll",
        arguments: ["strict", "grouped"]
    )
    func killWhileStartingAndFinishing(mode: String) async throws {
        let dir = TemporaryDirectory("lifecycle-\(mode)")
        let configuration = DurableConfiguration(mode: mode == "grouped" ? .grouped : .strict, actions: Checkout.actions)
        var ledger = CheckoutCrashLedger()
        let children = try ledger.runKilledChildren(store: dir.path, mode: mode, rounds: TestLoad.scaled(6))
        #expect(children.isEmpty, "\(children)")
        let store = try WorkflowStore.open(path: dir.path)
        let problems = try await ledger.problems(in: store, configuration: configuration)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }
}
