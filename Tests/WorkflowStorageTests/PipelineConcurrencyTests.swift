@testable import DurableWorkflow
import Foundation
import TestWorkflows
import Testing
import Workflow
import WorkflowLocks
import WorkflowSignals
import WorkflowStorage

/// An in-memory store that takes several commits at once, each held for a random moment, and
/// records any instance that two commits carried at the same time.
final class SlowConcurrentStorage: InMemoryWrapper {
    let inner = InMemoryStorage(name: "slow-concurrent")
    let concurrentCommits: Int
    let concurrentCalls: Int
    /// Whether a commit is made (and visible to readers) before the pause, as a database
    /// server's commit is before its acknowledgement reaches the client; else after it.
    let returnsLate: Bool
    private let state = Lock(State())
    /// Signalled when a commit starts while another is held (see `holdNextCommit`).
    private let secondCommit = DispatchSemaphore(value: 0)

    /// Where a hold armed by `holdNextCommit` stands.
    enum Hold { case none, armed, holding, released }

    struct State {
        /// Whether the next commit waits, before it writes, until another starts beside it.
        var hold = Hold.none
        var inFlight: Set<String> = []
        var overlaps: [String] = []
        var concurrentPeak = 0
        var running = 0
        var claimsRunning = 0
        var claimsPeak = 0
        /// Calls of the read methods, by name.
        var reads: [String: Int] = [:]
    }

    init(concurrentCommits: Int, concurrentCalls: Int? = nil, returnsLate: Bool = false) {
        self.concurrentCommits = concurrentCommits
        self.concurrentCalls = concurrentCalls ?? concurrentCommits
        self.returnsLate = returnsLate
    }

    var overlaps: [String] { state.withLock { $0.overlaps } }
    var concurrentPeak: Int { state.withLock { $0.concurrentPeak } }

    /// The next commit waits (at most `holdTimeout`) until a second one starts beside it, so
    /// that a test sees whether the pipeline starts another round while one is in flight, however
    /// fast or slow the machine runs the hosts that fill it.
    func holdNextCommit() { state.withLock { $0.hold = .armed } }

    /// Returns once the commit `holdNextCommit` armed is waiting (or `holdTimeout` passed).
    func untilHolding() async { await until { $0 != .armed } }

    /// Returns once the held commit goes on (or `holdTimeout` passed).
    func untilReleased() async { await until { $0 != .armed && $0 != .holding } }

    private func until(_ condition: (Hold) -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(state.withLock { $0.hold }), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
    }

    static let holdTimeout = DispatchTimeInterval.seconds(10)
    /// The most claims (resumes) that were in progress at once.
    var claimsPeak: Int { state.withLock { $0.claimsPeak } }
    /// How many times each read method was called (`instance`, `readEntries`, `readSnapshots`,
    /// `readTail`, `claim`), since the last `resetReads()`.
    var reads: [String: Int] { state.withLock { $0.reads } }
    func resetReads() { state.withLock { $0.reads = [:] } }
    private func counting(_ name: String) { state.withLock { $0.reads[name, default: 0] += 1 } }

    var isDurable: Bool { false }

    func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        let (holds, releases) = state.withLock { state -> (Bool, Bool) in
            for changes in request.changes where !state.inFlight.insert(changes.id).inserted { state.overlaps.append(changes.id) }
            state.running += 1
            state.concurrentPeak = max(state.concurrentPeak, state.running)
            switch state.hold {
            case .armed:
                state.hold = .holding
                return (true, false)
            case .holding where state.running > 1:
                state.hold = .released
                return (false, true)
            default:
                return (false, false)
            }
        }
        if releases { secondCommit.signal() }
        if holds {
            _ = secondCommit.wait(timeout: .now() + Self.holdTimeout)
            state.withLock { $0.hold = .released }
        }
        defer {
            state.withLock { state in
                for changes in request.changes { state.inFlight.remove(changes.id) }
                state.running -= 1
            }
        }
        if returnsLate {
            let outcomes = try inner.commit(request)
            usleep(UInt32.random(in: 1_000...5_000))
            return outcomes
        }
        usleep(UInt32.random(in: 100...1_500))
        return try inner.commit(request)
    }

    func instance(id: String) throws(StorageFailure) -> StoredInstance? {
        counting("instance")
        return try inner.instance(id: id)
    }
    /// Each claim also takes a moment, as a round trip to a server does.
    func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        state.withLock { state in
            state.reads["claim", default: 0] += 1
            state.claimsRunning += 1
            state.claimsPeak = max(state.claimsPeak, state.claimsRunning)
        }
        defer { state.withLock { $0.claimsRunning -= 1 } }
        usleep(UInt32.random(in: 500...2_000))
        return try inner.claim(id: id, as: claim, takingOverIf: takingOverIf)
    }
    func readEntries(of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        counting("readEntries")
        try inner.readEntries(of: key, from: from, through: through, visit)
    }
    func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        counting("readSnapshots")
        try inner.readSnapshots(of: key, atMost: sequence, visit)
    }
    /// One call, as a database server's one query.
    func readTail(of key: UInt64, through sequence: UInt64, limit: Int) throws -> LogTail {
        counting("readTail")
        return try inner.readTail(of: key, through: sequence, limit: limit)
    }
}

@Suite("The commit pipeline with several commits in flight")
struct PipelineConcurrencyTests {
    @Test(
        "rounds overlap (grouped), but an instance is in one commit at a time and its entries land in order",
        arguments: ["strict", "grouped"]
    )
    func overlappingRounds(mode: String) async throws {
        let backend = SlowConcurrentStorage(concurrentCommits: 4)
        let store = WorkflowStore(backend: backend)
        // Small group commits, so that an instance hands in batches while one is in flight.
        let configuration = DurableConfiguration(
            mode: mode == "strict" ? .strict : .grouped(maxBatch: 4, maxDelay: .milliseconds(1)), actions: DurableCounter.actions)
        let sends = 120
        // Enough instances that more than `extraRoundMinimum` wait while a round is in flight.
        let hosts = try (0..<48).map { try store.start(DurableCounter(), id: "c\($0)", configuration: configuration) }
        // In grouped mode the first host's first round waits until another starts beside it (or
        // ten seconds pass). The other hosts start once it waits and each hand in one batch, then
        // wait for it to go on: 47 batches wait while a round is in flight, on any machine. (Let
        // run, a host that gets ahead by its whole backlog stops its thread until its batches go,
        // and two such hosts stop the test's two cooperative threads.)
        if mode == "grouped" { backend.holdNextCommit() }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    if mode == "grouped", host !== hosts[0] { await backend.untilHolding() }
                    // Half the instances await every fourth action (their rounds fall out of
                    // step, so rounds overlap), half send all at once (their batches pile up
                    // while one is in flight).
                    let awaits = mode == "strict" || hosts.firstIndex { $0 === host }! % 2 == 0
                    for amount in 1...sends {
                        if awaits && amount % 4 == 0 {
                            _ = await host.rendering.sink.sendAndWait(.init(amount: amount))
                        } else {
                            host.rendering.sink.send(.init(amount: amount))
                            if mode == "grouped" && amount == 4 { await backend.untilReleased() }
                        }
                    }
                    await host.flush()
                }
            }
        }
        for (index, host) in hosts.enumerated() {
            #expect(host.failure == nil)
            #expect(host.rendering.state == .init(count: sends * (sends + 1) / 2, applied: sends))
            #expect(try store.entries(of: "c\(index)").map(\.sequence) == Array(1...UInt64(sends + 1)))
            await host.stopAndWait()
        }
        #expect(backend.overlaps.isEmpty, "instances in two commits at once: \(Set(backend.overlaps))")
        if mode == "grouped" {
            // Strict hosts commit on their own threads, which the cooperative pool has few of: fewer
            // than `extraRoundMinimum` ever wait at once, so their rounds do not overlap (see below).
            #expect(backend.concurrentPeak > 1, "the rounds overlapped (peak \(backend.concurrentPeak))")
        }
        #expect(backend.concurrentPeak <= 4)
    }

    @Test(
        "resumeAll resumes as many instances at once as the backend serves calls, and lists them in id order",
        arguments: [(commits: 1, calls: 1), (commits: 4, calls: 4), (commits: 1, calls: 4)])
    func resumeAllAtOnce(concurrency: (commits: Int, calls: Int)) async throws {
        let backend = SlowConcurrentStorage(concurrentCommits: concurrency.commits, concurrentCalls: concurrency.calls)
        let store = WorkflowStore(backend: backend)
        let configuration = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let ids = (0..<24).map { "c\($0)" }
        for (index, id) in ids.enumerated() {
            let host = try store.start(DurableCounter(), id: id, configuration: configuration)
            for amount in stride(from: 1, through: index, by: 1) { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
            await host.stopAndWait()
        }
        let results = try store.resumeAll(DurableCounter.self, configuration: configuration)
        #expect(results.map(\.id) == ids.sorted())
        for result in results {
            let host = try #require(try? result.outcome.get(), "\(result.id): \(result.outcome)")
            let index = try #require(Int(result.id.dropFirst()))
            #expect(host.rendering.state == .init(count: index * (index + 1) / 2, applied: index))
            await host.stopAndWait()
        }
        if concurrency.calls == 1 {
            #expect(backend.claimsPeak == 1)
        } else {
            #expect(backend.claimsPeak > 1, "the resumes ran one at a time")
            #expect(backend.claimsPeak <= concurrency.calls)
        }
    }

    @Test("a resume claims the instance and reads its snapshot and log tail in one call, with no other read", arguments: [nil, 5])
    func resumeReadsOnce(snapshotEvery: Int?) async throws {
        let backend = SlowConcurrentStorage(concurrentCommits: 1)
        let store = WorkflowStore(backend: backend)
        let configuration = DurableConfiguration(mode: .strict, actions: DurableCounter.actions, snapshotEvery: snapshotEvery)
        let host = try store.start(DurableCounter(), id: "c", configuration: configuration)
        for amount in 1...12 { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
        await host.stopAndWait()
        backend.resetReads()
        let resumed = try store.resume(id: "c", as: DurableCounter.self, configuration: configuration)
        #expect(resumed.rendering.state == .init(count: 78, applied: 12))
        #expect(backend.reads == ["claim": 1, "readTail": 1], "\(backend.reads)")
        await resumed.stopAndWait()
    }

    @Test("a log longer than one tail read resumes whole: the replay reads on after the tail")
    func resumeReadsOnAfterTail() async throws {
        let backend = SlowConcurrentStorage(concurrentCommits: 1)
        let store = WorkflowStore(backend: backend)
        let configuration = DurableConfiguration(
            mode: .grouped(maxBatch: 1_000, maxDelay: .milliseconds(1)), actions: DurableCounter.actions, snapshotEvery: nil, digests: .off)
        let actions = Int(WorkflowStore.replayChunk) + 500
        let host = try store.start(DurableCounter(), id: "c", configuration: configuration)
        for _ in 0..<actions { host.rendering.sink.send(.init(amount: 1)) }
        await host.flush()
        await host.stopAndWait()
        backend.resetReads()
        let resumed = try store.resume(id: "c", as: DurableCounter.self, configuration: configuration)
        #expect(resumed.rendering.state == .init(count: actions, applied: actions))
        #expect(backend.reads["readTail"] == 1 && backend.reads["readEntries"] == 1, "\(backend.reads)")
        await resumed.stopAndWait()
    }

    @Test("while fewer instances wait than a round of their own needs, no second round starts: they join the next")
    func fewWaitersShareTheNextRound() async throws {
        let backend = SlowConcurrentStorage(concurrentCommits: 4)
        let store = WorkflowStore(backend: backend)
        let configuration = DurableConfiguration(mode: .strict, actions: DurableCounter.actions)
        let count = CommitPipeline.extraRoundMinimum / 2, sends = 60

        let hosts = try (0..<count).map { try store.start(DurableCounter(), id: "c\($0)", configuration: configuration) }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for amount in 1...sends { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
                }
            }
        }
        for host in hosts {
            #expect(host.rendering.state == .init(count: sends * (sends + 1) / 2, applied: sends))
            await host.stopAndWait()
        }
        #expect(backend.concurrentPeak == 1, "\(count) awaiting instances overlapped rounds (peak \(backend.concurrentPeak))")
    }

    @Test("a signal version whose commit readers see before the commit returns is still applied once")
    func deliveryCommittedBeforeItReturns() async throws {
        // The dispatcher may read the consumer's new position (and hand over the next version)
        // before the commit that moved it has been settled: settling it must not reopen the
        // version handed over since.
        let backend = SlowConcurrentStorage(concurrentCommits: 1, returnsLate: true)
        let store = WorkflowStore(backend: backend)
        let center = try SignalCenter.open(store: store, processIdentity: "late-commits")
        let signal = SignalID()
        let host = try store.start(SignalTally(signal: signal), id: "tally", configuration: SignalTally.configuration(center: center))
        // Its consumer is registered by the wait's worker, which starts in the background.
        #expect(await SignalEngineContractTests.eventually { (try? center.consumers().count) == 1 })
        let versions = 60
        for version in 1...versions {
            _ = try center.post(signal, value: version, terminatesConsumersAfterDelivery: false)
            usleep(UInt32.random(in: 0...3_000))
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, host.rendering.count < versions { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        let values = try store.entries(of: "tally").filter { !$0.isProps }.map { BinaryPayloadCodec.jsonText($0.payload) ?? "?" }
        #expect(host.rendering == .init(count: versions, sum: versions * (versions + 1) / 2), "applied: \(values)")
        await host.stopAndWait()
        try center.stop()
    }
}
