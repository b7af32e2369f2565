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
        var started: Set<String> = [], finished: [String: (items: Int, paid: Int)] = [:]
        let rounds = TestLoad.scaled(6)
        for round in 0..<rounds {
            let child = try ChildProcess(["checkout-loop", dir.path, mode, "r\(round)"], mergeStandardError: true)
            guard child.readLine(timeout: .seconds(30)) == "ready" else {
                Issue.record("round \(round): the child did not start: \(child.readRemainingLines(timeout: .seconds(2)))")
                return
            }
            var lines: [String] = []
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 50...400))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) { lines.append(line) }
            child.kill()
            lines += child.readRemainingLines(timeout: .seconds(5))
            #expect(try child.waitForExit() == 128 + SIGKILL, "round \(round): \(lines.suffix(5))")
            for line in lines {
                let fields = line.split(separator: " ")
                if fields.first == "started" { started.insert("r\(round)-\(fields[1])") }
                if fields.first == "finished", fields.count == 4, let items = Int(fields[2]), let paid = Int(fields[3]) {
                    finished["r\(round)-\(fields[1])"] = (items, paid)
                }
            }
        }
        #expect(!finished.isEmpty, "no checkout finished before a kill")

        let store = try WorkflowStore.open(path: dir.path)
        let instances = try store.instances()
        #expect(started.isSubset(of: Set(instances.map(\.id))))
        for instance in instances {
            // Created with its first action, or not at all.
            let entries = try store.entries(of: instance.id, through: min(2, instance.lastSequence))
            #expect(entries.map(\.actionTag) == [LogEntry.propsTag, "checkout.open"], "\(instance.id): \(entries.map(\.actionTag))")
            if let receipt = finished[instance.id] {
                #expect(instance.status == .completed, "\(instance.id) finished before the kill but is \(instance.status)")
                #expect(receipt.paid == 3 && instance.lastSequence == 5)
            }
            if instance.status == .completed {
                let again = try store.resume(id: instance.id, as: Checkout.self, configuration: configuration)
                guard case .receipt(let receipt) = try await again.completion else {
                    Issue.record("\(instance.id): completed without a receipt")
                    continue
                }
                #expect(receipt.paid == 3 && "\(instance.id)".hasSuffix("-\(receipt.items)"))
                await again.stopAndWait()
            }
        }
        // What was still running finishes after a restart.
        let results = try store.resumeAll(Checkout.self, configuration: configuration)
        for result in results {
            let host = try #require(result.host, "\(result.id): \(String(describing: result.error))")
            let missing = 3 - host.rendering.state.paid
            for _ in 0..<missing { try await host.rendering.pay.sendAndCommit(.init(amount: 1)) }
            #expect(try await host.completion == .receipt(.init(items: host.rendering.state.items, paid: 3)))
        }
        #expect(try store.instances(status: .running).isEmpty)
        #expect(try store.instances(status: .completed).count == instances.count)
    }
}
