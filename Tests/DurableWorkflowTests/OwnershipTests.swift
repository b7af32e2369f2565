import DurableWorkflow
import TestSupport
import TestWorkflows
import Testing

@Suite("One host per instance: a second writer is refused (B1)")
struct OwnershipTests {
    @Test("resuming an instance that a live host in this process runs is refused; after it stops, resume works")
    func secondHostInProcess() throws {
        let dir = TemporaryDirectory("owner-local")
        let store = try WorkflowStore.open(path: dir.path)
        let first = try store.start(DurableCounter(), id: "x", configuration: counterConfiguration())
        first.rendering.sink.send(.init(amount: 1))
        expectDurableError(.instanceInUse) { _ = try store.resume(id: "x", as: DurableCounter.self, configuration: counterConfiguration()) }
        expectDurableError(.instanceInUse) { try store.delete(id: "x") }
        first.stop()
        let second = try store.resume(id: "x", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(second.rendering.state.count == 1)
    }

    @Test("an instance run by another live process is refused; once that process is killed, its claim is taken over")
    func secondWriterProcess() throws {
        let dir = TemporaryDirectory("owner-process")
        let child = try ChildProcess(["durable-counter-loop", dir.path, "strict"], mergeStandardError: true)
        #expect(child.readLine()?.hasPrefix("ready ") == true)
        #expect(child.readLine()?.hasPrefix("ack ") == true)
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.instanceInUse) {
            _ = try store.resume(id: "torture", as: DurableCounter.self, configuration: counterConfiguration())
        }
        #expect(error?.description.contains("process \(child.pid)") == true)
        child.kill()
        try child.waitForExit()
        let host = try store.resume(id: "torture", as: DurableCounter.self, configuration: counterConfiguration())
        let state = host.rendering.state
        #expect(state.count == state.applied * (state.applied + 1) / 2)
    }
}
