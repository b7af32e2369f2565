import DurableWorkflow
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB

func counterConfiguration(_ mode: DurableConfiguration.Mode = .strict, snapshotEvery: Int? = nil) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: DurableCounter.actions, snapshotEvery: snapshotEvery)
}

@Suite("Durable instances: start, resume, list, complete, delete")
struct StartResumeTests {
    @Test("an instance's state is rebuilt by replay after its store is closed and reopened")
    func resumeRebuildsState() throws {
        let dir = TemporaryDirectory("durable-resume")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let host = try store.start(DurableCounter(step: 2), id: "c1", configuration: counterConfiguration())
            for amount in 1...10 { host.rendering.sink.send(.init(amount: amount)) }
            #expect(host.rendering.state == .init(count: 110, applied: 10))
            host.stop()
        }
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "c1", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(host.rendering.state == .init(count: 110, applied: 10))
        host.rendering.sink.send(.init(amount: 1))
        #expect(host.rendering.state.count == 112)
        #expect(try store.instance(id: "c1")?.lastSequence == 12)
    }

    @Test("a closed store lets go of its files at once, even while a stopped host's worker is still ending and the process holds the host and the store: its files can be deleted and a new store opened at the path; the closed store then fails with a typed error")
    func storeReplacedAfterClose() throws {
        let dir = TemporaryDirectory("replaced-after-stop")
        // In a process of its own: the sanitizers keep tracking mutexes in a deleted lock file's
        // mapping, and this process runs every other test after it.
        let child = try ChildProcess(["lmdb-store-replaced-after-close", dir.path], mergeStandardError: true)
        let lines = child.readRemainingLines()
        #expect(try child.waitForExit() == 0, "\(lines)")
        #expect(lines == ["reopened: 0 instances", "closed store: storage, closed"])
    }

    @Test("closing the store under a running host fails the host at its next commit with a typed error (kind closed), nothing of it written; the store opened again resumes the instance as it was committed")
    func closeUnderRunningHost() async throws {
        let dir = TemporaryDirectory("close-under-host")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(DurableCounter(), id: "c1", configuration: counterConfiguration())
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 1)))
        try store.close()
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 5)) == false)
        let failure = host.failure as? DurableError
        #expect(failure?.kind == .storage)
        #expect(failure?.storageFailure?.kind == .closed)
        let reopened = try WorkflowStore.open(path: dir.path)
        let resumed = try reopened.resume(id: "c1", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(resumed.rendering.state == .init(count: 1, applied: 1))
    }

    @Test("each log entry records sequence, node path, tag and version, payload, time and origin")
    func entriesDescribeActions() throws {
        let dir = TemporaryDirectory("durable-entries")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(DurableCounter(), id: "c", configuration: counterConfiguration())
        host.rendering.sink.send(.init(amount: 5))
        let entries = try store.entries(of: "c")
        #expect(entries.map(\.sequence) == [1, 2])
        #expect(entries[0].isProps && entries[0].origin == .props)
        #expect(entries[1].actionTag == "counter.add" && entries[1].actionVersion == 1)
        #expect(entries[1].origin == .sink)
        #expect(entries[1].nodePath.description == "/DurableCounter")
        #expect(entries[1].payload.first == BinaryPayloadCodec.marker)  // the default codec
        #expect(BinaryPayloadCodec.jsonText(entries[1].payload) == #"{"amount":5}"#)
        #expect(entries[1].digest != nil)
        #expect(entries[1].time >= entries[0].time)
    }

    @Test("instances are listed, completed and deleted; deleting one leaves the others intact")
    func listCompleteDelete() throws {
        let dir = TemporaryDirectory("durable-list")
        let store = try WorkflowStore.open(path: dir.path)
        for id in ["a", "b", "c"] {
            let host = try store.start(DurableCounter(), id: id, configuration: counterConfiguration())
            host.rendering.sink.send(.init(amount: 1))
            host.stop()
        }
        #expect(try store.instances().map(\.id) == ["a", "b", "c"])
        try store.complete(id: "b")
        #expect(try store.instances(status: .completed).map(\.id) == ["b"])
        #expect(try store.instances(status: .running, workflowType: "DurableCounter").map(\.id) == ["a", "c"])
        try store.delete(id: "a")
        #expect(try store.instance(id: "a") == nil)
        #expect(try store.statistics().logEntries == 4)
        #expect(try store.resume(id: "c", as: DurableCounter.self, configuration: counterConfiguration()).rendering.state.count == 1)
        expectDurableError(.instanceNotFound) { _ = try store.resume(id: "a", as: DurableCounter.self) }
        expectDurableError(.instanceExists) { _ = try store.start(DurableCounter(), id: "c") }
    }

    @Test("props updates from the host are log entries and are replayed")
    func propsAreLogged() throws {
        let dir = TemporaryDirectory("durable-props")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(DurableCounter(step: 1), id: "p", configuration: counterConfiguration())
        host.rendering.sink.send(.init(amount: 1))
        host.update(workflow: DurableCounter(step: 10))
        host.rendering.sink.send(.init(amount: 1))
        #expect(host.rendering.state.count == 11)
        host.stop()
        let entries = try store.entries(of: "p")
        #expect(entries.map(\.origin) == [.props, .sink, .props, .sink])
        let resumed = try store.resume(id: "p", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(resumed.rendering.state.count == 11)
        resumed.rendering.sink.send(.init(amount: 1))
        #expect(resumed.rendering.state.count == 21)
    }

    @Test("grouped mode: several actions share one commit; sendAndWait and flush return once committed")
    func groupedCommits() async throws {
        let dir = TemporaryDirectory("durable-grouped")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(DurableCounter(), id: "g", configuration: counterConfiguration(.grouped))
        let sink = host.rendering.sink
        let before = try #require(try store.statistics().lastTransactionID)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { for _ in 0..<250 { sink.send(.init(amount: 1)) } } }
        }
        #expect(await sink.sendAndWait(.init(amount: 1)))
        await host.flush()
        #expect(try store.instance(id: "g")?.lastSequence == 1002)
        #expect(host.rendering.state.count == 1001)
        // Far fewer commits than entries.
        #expect(try #require(try store.statistics().lastTransactionID) - before < 1001)
    }
}
