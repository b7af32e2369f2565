import DurableWorkflow
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB
import WorkflowLocks
#if canImport(Glibc)
import Glibc
#endif

@Suite("One host per instance: a second writer is refused (B1)")
struct OwnershipTests {
    @Test("resuming an instance that a live host in this process runs is refused; after it stops, resume works")
    func secondHostInProcess() throws {
        let dir = TemporaryDirectory("owner-local")
        let store = try WorkflowStore.open(path: dir.path)
        let first = try store.start(DurableCounter(), id: "x", configuration: counterConfiguration())
        first.rendering.sink.send(.init(amount: 1))
        expectDurableError(.instanceInUse) { _ = try store.resume(id: "x", as: DurableCounter.self, configuration: counterConfiguration()) }
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

    @Test("a killed process's claim is taken over at once, while the process is still a zombie (issue 22, 3)")
    func zombieOwnerIsDead() throws {
        let dir = TemporaryDirectory("owner-zombie")
        let child = try ChildProcess(["durable-counter-loop", dir.path, "strict"], mergeStandardError: true)
        #expect(child.readLine()?.hasPrefix("ready ") == true)
        #expect(child.readLine()?.hasPrefix("ack ") == true)
        child.kill()
        // Not reaped: the killed child stays a zombie, its /proc entry present, until waited for.
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessStatus.read(child.pid)?.hasExited != true, ContinuousClock.now < deadline { usleep(1000) }
        #expect(ProcessStatus.read(child.pid)?.hasExited == true, "the child should be a zombie now")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "torture", as: DurableCounter.self, configuration: counterConfiguration())
        let state = host.rendering.state
        #expect(state.count == state.applied * (state.applied + 1) / 2)
        #expect(ProcessStatus.read(child.pid)?.hasExited == true, "the child was still unreaped during the resume")
        try child.waitForExit()
    }

    @Test("a process's status is read from /proc: a live one with its start time, a zombie as exited, a stopped one, none for no pid")
    func processStatusParsing() throws {
        let me = try #require(ProcessStatus.read(getpid()))
        #expect(!me.hasExited)
        #expect(ProcessIdentity.current.startTime == me.startTime)
        #expect(!ProcessIdentity.current.isProvablyDead)
        #expect(ProcessIdentity(pid: getpid(), startTime: me.startTime + 1).isProvablyDead)
        let zombie = try #require(ProcessStatus.parse(Array("42 (a) b) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 1".utf8)))
        #expect(zombie.hasExited && zombie.startTime == 777 && zombie.command == "a) b" && !zombie.isStopped)
        let stopped = try #require(ProcessStatus.parse(Array("42 (wf) T 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 1".utf8)))
        #expect(stopped.isStopped && !stopped.hasExited)
        #expect(ProcessStatus.read(-1) == nil)
    }
}
