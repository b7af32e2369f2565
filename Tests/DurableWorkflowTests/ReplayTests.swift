import DurableWorkflow
import Synchronization
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks
import WorkflowTesting

/// Counts side-effect runs and worker starts per test (props must be Codable, so tests name
/// their counters instead of passing objects).
enum Probe {
    private static let counters = Lock<[String: [String]]>([:])
    static func record(_ name: String, _ event: String) { counters.withLock { $0[name, default: []].append(event) } }
    static func events(_ name: String) -> [String] { counters.withLock { $0[name] ?? [] } }
}

/// A workflow with a side effect per phase and a long-running upload worker.
struct Uploader: Workflow, Codable, Sendable {
    var probe: String

    struct State: Codable, Equatable { var phase = 0 }

    struct Advance: DurableAction {
        typealias WorkflowType = Uploader
        func apply(toState state: inout State) -> Never? {
            state.phase += 1
            return nil
        }
    }

    /// Never finishes; records the idempotency key it was started with.
    struct UploadWorker: Worker {
        let probe: String
        func run() -> AsyncStream<Advance> {
            Probe.record(probe, "worker \(WorkerContext.idempotencyKey ?? "none")")
            return AsyncStream { _ in }
        }
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<Uploader>) -> Sink<Advance> {
        let probe = self.probe, phase = state.phase
        context.runSideEffect(key: "phase-\(phase)") { _ in Probe.record(probe, "effect \(phase)") }
        context.run(UploadWorker(probe: probe), key: "upload")
        return context.makeSink(of: Advance.self)
    }
}

@Suite("Replay, snapshots and time travel (D3, D5)")
struct ReplayTests {
    @Test("full replay and snapshot+tail replay agree; time travel to N equals the live state after action N")
    func snapshotsAndTimeTravel() throws {
        let dir = TemporaryDirectory("replay")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = counterConfiguration(snapshotEvery: 10)
        let host = try store.start(DurableCounter(step: 3), id: "t", configuration: configuration)
        var live: [UInt64: DurableCounter.State] = [1: host.rendering.state]
        for amount in 1...95 {
            host.rendering.sink.send(.init(amount: amount * amount % 17))
            live[UInt64(amount + 1)] = host.rendering.state
        }
        host.stop()
        #expect(try store.instance(id: "t")?.lastSnapshot == 90)
        for sequence: UInt64 in [1, 2, 9, 10, 11, 50, 90, 91, 96] {
            let tree = try store.state(of: "t", as: DurableCounter.self, at: sequence, configuration: configuration)
            #expect(try tree.rootState(as: DurableCounter.State.self) == live[sequence], "at \(sequence)")
        }
        let report = try store.verify(id: "t", as: DurableCounter.self, configuration: configuration)
        #expect(report.isConsistent)
        #expect(report.snapshotSequence == 90)
        #expect(report.fullReplayDigest == report.snapshotReplayDigest)
        expectDurableError(.sequenceOutOfRange) { _ = try store.state(of: "t", as: DurableCounter.self, at: 97, configuration: configuration) }
    }

    @Test("no side effect or worker runs during replay; the live tree's start once after it, workers with the same idempotency key")
    func noEffectsDuringReplay() async throws {
        let dir = TemporaryDirectory("replay-effects")
        let probe = "effects-\(dir.path)"
        let configuration = DurableConfiguration(actions: ActionRegistry(Uploader.Advance.self), snapshotEvery: 3)
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let host = try store.start(Uploader(probe: probe), id: "u", configuration: configuration)
            for _ in 0..<5 { host.rendering.send(Uploader.Advance()) }
            await waitUntil { Probe.events(probe).contains { $0.hasPrefix("worker") } }
            await host.stopAndWait()
        }
        let live = Probe.events(probe)
        #expect(live.filter { $0.hasPrefix("effect") } == (0...5).map { "effect \($0)" })
        let workerKeys = live.filter { $0.hasPrefix("worker") }
        // The key: the instance's id and incarnation, the node, the worker's key, its first sequence.
        let key = try #require(workerKeys.first)
        #expect(workerKeys.count == 1 && key.hasPrefix("worker u~") && key.hasSuffix("/Uploader#upload@1"), "\(workerKeys)")

        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "u", as: Uploader.self, configuration: configuration)
        await waitUntil { Probe.events(probe).count == live.count + 2 }
        let afterResume = Array(Probe.events(probe).dropFirst(live.count))
        // Only the live tree's side effect and worker start; the worker keeps its idempotency key
        // (resumed from the snapshot at 3 and from entries 4..6).
        #expect(afterResume == ["effect 5", key])
        host.stop()
    }

    /// Starts instance "r" of Reminder due 60 s after now, then stops its host (the process is "down").
    func startReminderDueIn60Seconds(_ dir: TemporaryDirectory, clock: ManualClock) throws -> (WallTime, DurableConfiguration) {
        let configuration = DurableConfiguration(actions: ActionRegistry(Reminder.Action.self), host: .init(clock: clock))
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Reminder(), id: "r", configuration: configuration)
        host.rendering.sink.send(.start(delaySeconds: 60))
        host.stop()
        return (clock.now(), configuration)
    }

    @Test("a timer due while the process was down fires exactly once after resume, as a logged timer action")
    func timerDueWhileDown() async throws {
        let dir = TemporaryDirectory("timer-down")
        let clock = ManualClock()
        let (start, configuration) = try startReminderDueIn60Seconds(dir, clock: clock)
        clock.advance(to: start + .seconds(120))
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "r", as: Reminder.self, configuration: configuration)
        // A rendering is released once its action is durable, so the store shows the timer's
        // entry before the host publishes the state it made: wait for the rendering.
        await waitUntil { host.rendering.state.firedAt != nil }
        let entries = try store.entries(of: "r")
        #expect(entries.map(\.origin) == [.props, .sink, .timer])
        #expect(host.rendering.state.firedAt == start + .seconds(120))
        try await Task.sleep(for: .milliseconds(30))
        #expect(try store.entries(of: "r").count == 3)
    }

    @Test("a timer not yet due at resume fires at its original deadline")
    func timerFiresAtOriginalDeadline() async throws {
        let dir = TemporaryDirectory("timer-later")
        let clock = ManualClock()
        let (start, configuration) = try startReminderDueIn60Seconds(dir, clock: clock)
        clock.advance(to: start + .seconds(30))
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "r", as: Reminder.self, configuration: configuration)
        await waitUntil { clock.sleeperCount == 1 }
        clock.advance(to: start + .seconds(59))
        try await Task.sleep(for: .milliseconds(30))
        #expect(host.rendering.state.firedAt == nil)
        clock.advance(to: start + .seconds(60))
        await waitUntil { host.rendering.state.firedAt != nil }
        #expect(host.rendering.state.firedAt == start + .seconds(60))
        #expect(try store.entries(of: "r").map(\.origin) == [.props, .sink, .timer])
    }
}

/// Waits (polling every millisecond, bounded) until `condition` holds.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + timeout
    while !condition() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
}

/// Records what a durable observer is told.
struct RecordingDurableObserver: DurableObserver {
    let probe: String
    func didCommit(instance: String, batchSize: Int, lastSequence: UInt64, duration: Duration) {
        Probe.record(probe, "commit \(batchSize) ->\(lastSequence)")
    }
    func replayWillStart(instance: String, from base: UInt64, to target: UInt64) { Probe.record(probe, "replay \(base)..\(target)") }
    func replayDidFinish(instance: String, entries: UInt64, duration: Duration) { Probe.record(probe, "replayed \(entries)") }
}

@Suite("Snapshots on demand, props across snapshots, observers")
struct SnapshotOnDemandTests {
    @Test("an on-demand snapshot is used by the next resume; props updated after it are kept by later snapshots")
    func onDemandSnapshot() throws {
        let dir = TemporaryDirectory("snap-demand")
        let probe = "observer-\(dir.path)"
        var configuration = counterConfiguration(snapshotEvery: 4)
        configuration.observers = [RecordingDurableObserver(probe: probe)]
        let store = try WorkflowStore.open(path: dir.path)
        do {
            let host = try store.start(DurableCounter(step: 1), id: "s", configuration: configuration)
            host.rendering.sink.send(.init(amount: 1))          // 2
            host.update(workflow: DurableCounter(step: 100))   // 3 (props)
            host.stop()
        }
        #expect(try store.snapshot(id: "s", as: DurableCounter.self, configuration: configuration) == 3)
        do {
            let host = try store.resume(id: "s", as: DurableCounter.self, configuration: configuration)
            #expect(host.rendering.state.count == 1)
            host.rendering.sink.send(.init(amount: 1))          // 4: automatic snapshot
            #expect(host.rendering.state.count == 101)
            host.stop()
        }
        #expect(try store.instance(id: "s")?.lastSnapshot == 4)
        let host = try store.resume(id: "s", as: DurableCounter.self, configuration: configuration)
        host.rendering.sink.send(.init(amount: 1))              // step must still be 100
        #expect(host.rendering.state.count == 201)
        #expect(try store.verify(id: "s", as: DurableCounter.self, configuration: configuration).isConsistent)
        let events = Probe.events(probe)
        #expect(events.first == "commit 1 ->1", "the start's props entry is the first commit observed")
        #expect(events.contains("commit 1 ->2"))
        #expect(events.contains("replay 3..3"))
        #expect(events.contains("replay 4..4"))
    }
}
