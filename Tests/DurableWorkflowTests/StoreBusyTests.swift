import DurableWorkflow
import LMDB
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB
import WorkflowLocks
import WorkflowStorage
#if canImport(Glibc)
import Glibc
#endif

/// Issue 62, point 6: a process frozen in a commit holds LMDB's one writer; every other process's
/// open, start and resume used to wait for it without end and without a word.
@Suite("A store's writer held by a stopped process: calls answer within the wait, typed")
struct StoreBusyTests {
    /// Whether `error` is the typed answer of a call that found the writer held by `pid`, stopped.
    private func isBusy(_ error: DurableError, heldBy pid: Int32) -> Bool {
        guard error.kind == .storage, let failure = error.storageFailure, failure.kind == .storeBusy else { return false }
        let holder = (failure.underlying as? LMDBError)?.holder
        #expect(holder?.pid == pid && holder?.state == .stopped, "\(error)")
        #expect(error.description.contains("process \(pid)") && error.description.contains("stopped"), "\(error)")
        return true
    }

    @Test("a service process stopped at 20 random moments: open, start and resume from another process each answer within the wait; after SIGCONT it goes on, nothing applied twice")
    func stoppedInCommit() throws {
        let dir = TemporaryDirectory("busy-stopped")
        let child = try ChildProcess(["durable-counter-loop", dir.path, "strict"], mergeStandardError: true)
        #expect(child.readLine()?.hasPrefix("ready ") == true)
        var lastAck = 0
        func ack(_ line: String) -> Int? { line.hasPrefix("ack ") ? Int(line.dropFirst(4)) : nil }
        #expect(child.readLine(until: { ack($0) != nil }) != nil)
        let wait = Duration.milliseconds(500)
        let configuration = StoreConfiguration(environment: EnvironmentConfiguration(writerWait: wait))
        var busy = 0, slowest = Duration.zero, started: [String] = []
        func timed(_ body: () throws -> Void) rethrows {
            let begun = ContinuousClock.now
            defer { slowest = max(slowest, ContinuousClock.now - begun) }
            try body()
        }
        for round in 1...20 {
            usleep(UInt32.random(in: 2_000...20_000))
            child.kill(SIGSTOP)
            let deadline = ContinuousClock.now + .seconds(10)
            while ProcessStatus.read(child.pid)?.isStopped != true, ContinuousClock.now < deadline { usleep(200) }
            var store: WorkflowStore?
            do {
                try timed { store = try WorkflowStore.open(path: dir.path, configuration: configuration) }
            } catch let error as DurableError where isBusy(error, heldBy: child.pid) {
                busy += 1
            }
            if let store {
                do {
                    try timed {
                        let host = try store.start(DurableCounter(), id: "probe-\(round)", configuration: counterConfiguration())
                        started.append("probe-\(round)")
                        host.stop()
                    }
                } catch let error as DurableError where isBusy(error, heldBy: child.pid) {
                    busy += 1
                }
                do {
                    try timed { _ = try store.resume(id: "torture", as: DurableCounter.self, configuration: counterConfiguration()) }
                    Issue.record("resumed an instance that a live (stopped) process holds")
                } catch let error as DurableError where error.kind == .instanceInUse || isBusy(error, heldBy: child.pid) {
                }
                try store.close()
            }
            child.kill(SIGCONT)
            let before = lastAck
            let line = child.readLine(until: { line in
                if let number = ack(line) { lastAck = max(lastAck, number) }
                return lastAck > before
            })
            #expect(line != nil, "no commit after SIGCONT: \(child.diagnosis)")
        }
        // A strict commit holds the writer through its syncs: most stops land inside one.
        #expect(busy >= 5, "only \(busy) calls found the writer held")
        #expect(slowest < wait + .seconds(1), "a call took \(slowest) with a wait of \(wait)")
        print("stall: \(busy) of the calls in 20 stops found the writer held and answered storeBusy; the slowest call took \(slowest) with a wait of \(wait)")
        child.kill()
        _ = try child.waitForExit()
        // Nothing applied twice, nothing acknowledged lost: the sum of 1...applied, through the
        // last acknowledgement; the probes that started and no others.
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "torture", as: DurableCounter.self, configuration: counterConfiguration())
        let state = host.rendering.state
        #expect(state.count == state.applied * (state.applied + 1) / 2)
        #expect(state.applied >= lastAck)
        host.stop()
        #expect(try store.instances().map(\.id).filter { $0.hasPrefix("probe-") }.sorted() == started.sorted())
    }
}
