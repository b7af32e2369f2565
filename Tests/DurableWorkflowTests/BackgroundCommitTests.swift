import DurableWorkflow
import Foundation
import LMDB
import Synchronization
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks
import WorkflowStorage

/// Holds the first group commit on its writing thread (an observer's `didCommit` runs there
/// before the host hears of the commit) until the test opens it.
private final class CommitGate: DurableObserver {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)
    private let commits = Lock(0)

    func didCommit(instance: String, batchSize: Int, lastSequence: UInt64, duration: Duration) {
        // The start's own commit (the props entry) is made before the host runs.
        guard lastSequence > 1 else { return }
        let first = commits.withLock { count -> Bool in
            count += 1
            return count == 1
        }
        guard first else { return }
        entered.signal()
        opened.wait()
    }

    /// Waits (up to a minute) until the first commit is held.
    func waitUntilHeld() -> Bool { entered.wait(timeout: .now() + 60) == .success }
    func open() { opened.signal() }
}

/// Starts a `DurableCounter` whose group commits hold up to `maxBatch` entries (no timed commit),
/// watched by `observer`.
private func startGroupedCounter(
    in store: WorkflowStore, id: String, maxBatch: Int, observer: any DurableObserver
) throws -> WorkflowHost<DurableCounter> {
    var configuration = counterConfiguration(.grouped(maxBatch: maxBatch, maxDelay: .seconds(3600)))
    configuration.observers = [observer]
    return try store.start(DurableCounter(), id: id, configuration: configuration)
}

/// Opens the store at `path` with another configuration than the one it was last open with, once
/// this process has let go of it: a stopped host's commit and drain threads drop their last
/// references to its store moments after the host stopped.
private func reopen(_ path: String, configuration: StoreConfiguration) async throws -> WorkflowStore {
    let deadline = ContinuousClock.now + .seconds(10)
    while true {
        let attempt = Result { () throws(DurableError) in try WorkflowStore.open(path: path, configuration: configuration) }
        if case .failure(let error) = attempt, error.kind == .storage, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
            continue
        }
        return try attempt.get()
    }
}

/// Every entry a durable observer is told was appended, in order.
private final class AppendedEntries: DurableObserver {
    private let entries = Lock<[LogEntry]>([])
    var all: [LogEntry] { entries.withLock { $0 } }
    func didAppend(_ entry: LogEntry, instance: String) { entries.withLock { $0.append(entry) } }
}

/// A counter whose root emits each new count as an output and, once the count reaches 2, runs a
/// side effect: consequences that must wait for their entry's commit.
private struct Announcer: Workflow, Codable, Sendable {
    typealias Output = Int

    struct Bump: DurableAction {
        typealias WorkflowType = Announcer
        static let tag = "announcer.bump"
        func apply(toState state: inout Int) -> Int? {
            state += 1
            return state
        }
    }

    let effects: EffectLog

    enum CodingKeys: CodingKey {}
    init(effects: EffectLog) { self.effects = effects }
    init(from decoder: any Decoder) throws { effects = EffectLog() }
    func encode(to encoder: any Encoder) throws {}

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Announcer>) -> (count: Int, sink: Sink<Bump>) {
        if state >= 2 {
            let effects = self.effects
            context.runSideEffect(key: "at-two") { _ in effects.record("started with count rendered") }
        }
        return (state, context.makeSink(of: Bump.self))
    }
}

/// What side effects did, from any thread.
final class EffectLog: Sendable {
    private let lines = Lock<[String]>([])
    func record(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Collects renderings as they are published.
private final class Published: Sendable {
    private let counts = Lock<[Int]>([])
    func append(_ count: Int) { counts.withLock { $0.append(count) } }
    var all: [Int] { counts.withLock { $0 } }
}

@Suite("Group commits in the background: the host applies on while a batch is written (D2)")
struct BackgroundCommitTests {
    @Test("a batch being committed holds its renderings, outputs and side effects; the host applies the next actions meanwhile; all are released in order once committed")
    func heldUntilCommitted() async throws {
        let dir = TemporaryDirectory("background-commit")
        let store = try WorkflowStore.open(path: dir.path)
        let gate = CommitGate(), effects = EffectLog(), published = Published()
        var configuration = DurableConfiguration(
            mode: .grouped(maxBatch: 3, maxDelay: .seconds(3600)), actions: ActionRegistry(Announcer.Bump.self))
        configuration.observers = [gate]
        let host = try store.start(Announcer(effects: effects), id: "a", configuration: configuration)
        let observation = host.observeRenderings { published.append($0.count) }
        defer { observation.cancel() }
        let sink = host.rendering.sink
        for _ in 0..<3 { sink.send(.init()) }
        #expect(gate.waitUntilHeld(), "the third action hands its batch to the background writer")
        // Written (after the start's props entry), but the host has not been told: nothing of
        // the batch has left the engine.
        #expect(try store.instance(id: "a")?.lastSequence == 4)
        for _ in 0..<2 { sink.send(.init()) }
        #expect(host.rendering.count == 0)
        #expect(published.all == [0])
        #expect(effects.all.isEmpty)
        gate.open()
        await host.flush()
        #expect(host.rendering.count == 5)
        #expect(published.all == [0, 1, 2, 3, 4, 5], "one rendering per render pass, in order")
        #expect(effects.all == ["started with count rendered"])
        #expect(try store.instance(id: "a")?.lastSequence == 6)
        await host.stopAndWait()
        var outputs: [Int] = []
        for await output in host.outputs { outputs.append(output) }
        #expect(outputs == [1, 2, 3, 4, 5])
    }

    @Test("a rendering stream open during group commits gets every render pass once, in order; the current rendering is the last committed")
    func streamSeesEveryCommittedRendering() async throws {
        let dir = TemporaryDirectory("background-stream")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(DurableCounter(), id: "r", configuration: counterConfiguration(.grouped(maxBatch: 7, maxDelay: .seconds(3600))))
        let published = Published()
        let reader = Task {
            for await rendering in host.renderings() { published.append(rendering.state.count) }
        }
        // The stream's reader runs on its own: waits for it are bounded, so a miss fails, not hangs.
        func waitFor(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while published.all.count < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        }
        try await waitFor(1)
        let sink = host.rendering.sink
        for _ in 0..<50 { sink.send(.init(amount: 1)) }
        await host.flush()
        #expect(host.rendering.state.count == 50)
        try await waitFor(51)
        #expect(published.all == Array(0...50), "the current rendering, then one per render pass, in order")
        reader.cancel()
        // Without a stream, batches publish only their last rendering: the current one is still exact.
        for _ in 0..<50 { sink.send(.init(amount: 2)) }
        await host.flush()
        #expect(host.rendering.state.count == 150)
        await host.stopAndWait()
    }

    @Test("an observer is told of each entry a group commit writes, exactly as it is in the log")
    func observerSeesAppendedEntries() async throws {
        let dir = TemporaryDirectory("background-observed")
        let store = try WorkflowStore.open(path: dir.path)
        let appended = AppendedEntries()
        let host = try startGroupedCounter(in: store, id: "o", maxBatch: 16, observer: appended)
        let sink = host.rendering.sink
        // Amounts of one to nine bytes, so the entries of one commit have payloads of many lengths
        // (each odd one takes back the even one before it).
        for index in 0..<100 { sink.send(.init(amount: (index % 2 == 0 ? 1 : -1) << (index / 2 % 60))) }
        await host.flush()
        await host.stopAndWait()
        // The start's props entry first, then the hundred actions.
        let logged = try store.entries(of: "o", from: 1)
        #expect(logged.count == 101)
        #expect(logged.first?.origin == .props)
        let seen = appended.all
        #expect(seen.count == logged.count)
        #expect(seen.map(\.sequence) == logged.map(\.sequence))
        #expect(seen == logged, "an observed entry differs from the logged one (payload, digest, target)")
    }

    @Test("stopping a host whose batch is being committed waits for that commit and commits the rest")
    func stopWaitsForBackgroundCommit() async throws {
        let dir = TemporaryDirectory("background-stop")
        let store = try WorkflowStore.open(path: dir.path)
        let gate = CommitGate()
        let host = try startGroupedCounter(in: store, id: "s", maxBatch: 4, observer: gate)
        let sink = host.rendering.sink
        for _ in 0..<6 { sink.send(.init(amount: 1)) }
        #expect(gate.waitUntilHeld())
        let opener = Task.detached {
            try? await Task.sleep(for: .milliseconds(50))
            gate.open()
        }
        await host.stopAndWait()
        await opener.value
        #expect(try store.instance(id: "s")?.lastSequence == 7, "the start's props entry and six actions")
        #expect(try store.entries(of: "s").map(\.sequence) == Array(1...7))
        let resumed = try store.resume(id: "s", as: DurableCounter.self, configuration: counterConfiguration(.grouped))
        #expect(resumed.rendering.state == .init(count: 6, applied: 6))
    }

    @Test("a background commit that fails (full map) stops the host with a typed error; only committed states were published and resume to")
    func backgroundFailureStopsTheHost() async throws {
        let dir = TemporaryDirectory("background-full")
        let small = StoreConfiguration(environment: .init(initialMapSize: 64 << 10, maximumMapSize: 1 << 20))
        var published = 0, committed: UInt64 = 0
        do {
            let store = try WorkflowStore.open(path: dir.path, configuration: small)
            let host = try store.start(DurableCounter(), id: "f", configuration: counterConfiguration(.grouped(maxBatch: 64, maxDelay: .seconds(3600))))
            let sink = host.rendering.sink
            var sent = 0
            while host.failure == nil && sent < 200_000 {
                sink.send(.init(amount: 1))
                sent += 1
            }
            await host.flush()
            let error = try #require(host.failure as? DurableError)
            #expect(error.kind == .storage)
            #expect(error.instance == "f")
            // In the engine's terms, with LMDB's own error underneath.
            let failure = try #require(error.storageFailure)
            #expect(failure.kind == .full && failure.backend == "LMDB" && failure.location == dir.path)
            #expect((failure.underlying as? LMDBError)?.kind == .mapFull)
            published = host.rendering.state.count
            committed = try #require(try store.instance(id: "f")).lastSequence
            #expect(committed > 0)
            // Sequence 1 is the start's props entry; each later one adds 1.
            #expect(UInt64(published) <= committed - 1, "nothing uncommitted was published")
            #expect(try store.entries(of: "f").map(\.sequence) == Array(1...committed), "no gap: nothing after the failed batch was written")
        }
        let store = try await reopen(dir.path, configuration: StoreConfiguration(environment: .init(maximumMapSize: 64 << 20)))
        let resumed = try store.resume(id: "f", as: DurableCounter.self, configuration: counterConfiguration(.grouped))
        #expect(resumed.rendering.state.count == Int(committed) - 1)
        resumed.rendering.sink.send(.init(amount: 1))
        await resumed.flush()
        #expect(try store.instance(id: "f")?.lastSequence == committed + 1)
    }

    @Test("commits that grow the map on the way tell observers of each entry once (issue 22, 8)")
    func mapGrowthAppendsOnce() async throws {
        let dir = TemporaryDirectory("background-growth-observed")
        let growing = StoreConfiguration(environment: .init(initialMapSize: 64 << 10, maximumMapSize: 256 << 20))
        let store = try WorkflowStore.open(path: dir.path, configuration: growing)
        let appended = AppendedEntries()
        var configuration = counterConfiguration(.grouped(maxBatch: 256, maxDelay: .seconds(3600)))
        configuration.observers = [appended]
        let host = try store.start(DurableCounter(), id: "g", configuration: configuration)
        for _ in 0..<5000 { host.rendering.sink.send(.init(amount: 1)) }
        await host.flush()
        #expect(host.failure == nil)
        let last = try #require(try store.instance(id: "g")).lastSequence
        #expect(last == 5001)
        #expect(try #require(try store.statistics().capacityBytes) > 64 << 10, "the map grew")
        #expect(appended.all.map(\.sequence) == Array(1...last))
    }

    @Test("an action that cannot be encoded stops a grouped host once its batch is written: a typed error naming instance, sequence and tag; its batch is not written; what was committed resumes")
    func unencodableActionInBackground() async throws {
        let dir = TemporaryDirectory("background-unencodable")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Picky(), id: "p", configuration: Picky.configuration(.grouped(maxBatch: 100, maxDelay: .seconds(3600))))
        let sink = host.rendering.sink
        sink.send(.init(value: 1))
        sink.send(.init(value: 2))
        await host.flush()
        #expect(host.failure == nil)
        sink.send(.init(value: 3))
        sink.send(.init(value: -1))
        sink.send(.init(value: 4))
        await host.flush()
        let error = try #require(host.failure as? DurableError)
        #expect(error.kind == .notCodable)
        #expect(error.instance == "p")
        #expect(error.sequence == 5, "the start's props entry, then 1, 2, 3 and the bad one")
        #expect(error.actionTag == "picky.put")
        #expect(host.rendering.values == [1, 2], "nothing of the failed batch was published")
        #expect(try store.instance(id: "p")?.lastSequence == 3)
        await host.stopAndWait()
        let resumed = try store.resume(id: "p", as: Picky.self, configuration: Picky.configuration(.grouped))
        #expect(resumed.rendering.values == [1, 2])
    }

    @Test("in strict mode the same action stops the host before send returns")
    func unencodableActionStrict() throws {
        let dir = TemporaryDirectory("strict-unencodable")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Picky(), id: "s", configuration: Picky.configuration(.strict))
        host.rendering.sink.send(.init(value: 1))
        host.rendering.sink.send(.init(value: -1))
        let error = try #require(host.failure as? DurableError)
        #expect(error.kind == .notCodable && error.sequence == 3)
        #expect(host.rendering.values == [1])
        #expect(try store.instance(id: "s")?.lastSequence == 2)
    }

    @Test("a held batch is committed once its delay is up, not before, batch after batch; one held after a commit made by flush gets its own full delay")
    func heldBatchCommitsWhenDue() async throws {
        let dir = TemporaryDirectory("background-due")
        let store = try WorkflowStore.open(path: dir.path)
        let delay = Duration.milliseconds(50)
        let host = try store.start(DurableCounter(), id: "d", configuration: counterConfiguration(.grouped(maxBatch: 10_000, maxDelay: delay)))
        let sink = host.rendering.sink
        /// Sends one action and returns how long its rendering took to be published, which it is
        /// once committed: nothing but the timer commits it (nobody waits, the batch never fills).
        func sendUntilCommitted() async throws -> Duration {
            let count = host.rendering.state.count
            let sent = ContinuousClock.now
            sink.send(.init(amount: 1))
            while host.rendering.state.count == count && ContinuousClock.now - sent < .seconds(10) {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(host.rendering.state.count == count + 1)
            return ContinuousClock.now - sent
        }
        for _ in 0..<3 { #expect(try await sendUntilCommitted() >= delay) }
        // A batch committed by flush while the timer sleeps towards its deadline, then a new batch:
        // the timer, woken at the old deadline, must wait on for the new batch's.
        sink.send(.init(amount: 1))
        try await Task.sleep(for: .milliseconds(30))
        await host.flush()
        #expect(try await sendUntilCommitted() >= delay)
        #expect(host.rendering.state.count == 5)
        #expect(try store.instance(id: "d")?.lastSequence == 6)
        await host.stopAndWait()
    }
}
