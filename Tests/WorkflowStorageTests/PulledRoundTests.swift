@testable import DurableWorkflow
import Foundation
import TestWorkflows
import Testing
import Workflow
import WorkflowLocks
import WorkflowStorage

/// A durable-looking in-memory store that writes a commit's parts as they are pulled (as LMDB
/// does), records each commit's parts, and can hold a commit before it asks for a further part.
final class PullingStorage: InMemoryWrapper {
    let inner = InMemoryStorage(name: "pulling")
    private let state = Lock(State())
    private let opened = DispatchSemaphore(value: 0)

    struct State {
        /// Whether the next ask for a part waits until ``open()``.
        var holdArmed = false
        /// How many holds have begun.
        var holds = 0
        /// For each commit, the ids of each of its parts.
        var commits: [[[String]]] = []
    }

    /// The next time a commit asks for a further part, it first waits until ``open()`` (ten
    /// seconds at most).
    func holdBeforeNextAsk() { state.withLock { $0.holdArmed = true } }
    func open() { opened.signal() }
    /// Returns once `count` holds have begun (or ten seconds passed).
    func untilHolds(_ count: Int) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.holds }) < count, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
    }
    var commits: [[[String]]] { state.withLock { $0.commits } }

    var isDurable: Bool { true }
    var writesPartsAsPulled: Bool { true }

    func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] { try commit(request, pullingMore: { nil }) }

    func commit(_ request: CommitRequest, pullingMore more: () -> CommitRequest?) throws(StorageFailure) -> [CommitOutcome] {
        var parts = [request.changes.map(\.id)]
        var merged = request
        while true {
            let holds = state.withLock { state -> Bool in
                defer { state.holdArmed = false }
                if state.holdArmed { state.holds += 1 }
                return state.holdArmed
            }
            if holds { _ = opened.wait(timeout: .now() + 10) }
            guard let part = more() else { break }
            parts.append(part.changes.map(\.id))
            merged.changes.append(contentsOf: part.changes)
        }
        state.withLock { $0.commits.append(parts) }
        return try inner.commit(merged)
    }
}

@Suite("The commit pipeline on a backend that writes a commit's parts as they are pulled")
struct PulledRoundTests {
    /// A store over a fresh ``PullingStorage``.
    func pullingStore() -> (PullingStorage, WorkflowStore) {
        let backend = PullingStorage()
        return (backend, WorkflowStore(backend: backend))
    }

    /// Starts a counter in `store` that hands each action to a background commit of its own.
    func counter(_ id: String, in store: WorkflowStore) throws -> WorkflowHost<DurableCounter> {
        try store.start(DurableCounter(), id: id, configuration: DurableConfiguration(
            mode: .grouped(maxBatch: 1, maxDelay: .seconds(3600)), actions: DurableCounter.actions))
    }

    @Test("instances that hand in batches while a round is being written join that round as a further part, and settle with it")
    func waitingInstancesJoinTheRoundInFlight() async throws {
        let (backend, store) = pullingStore()
        #expect(store.pipeline.pulls)
        let first = try counter("first", in: store)
        let others = try (0..<10).map { try counter("o\($0)", in: store) }

        backend.holdBeforeNextAsk()
        first.rendering.sink.send(.init(amount: 1))
        await backend.untilHolds(1)
        for (index, host) in others.enumerated() { host.rendering.sink.send(.init(amount: index + 1)) }
        // Each idle host applies its action on the sending thread and hands the batch to the
        // pipeline before `send` returns; the committer is held meanwhile.
        backend.open()
        await first.flush()
        for host in others { await host.flush() }
        let commits = backend.commits
        try #require(commits.count >= 1)
        #expect(commits[0].first == ["first"])
        #expect(Set(commits[0].dropFirst().flatMap { $0 }) == Set(others.indices.map { "o\($0)" }),
                "the ten instances went into the round in flight: \(commits)")
        #expect(commits.count == 1)
        #expect(first.rendering.state == .init(count: 1, applied: 1))
        for (index, host) in others.enumerated() {
            #expect(host.failure == nil)
            #expect(host.rendering.state == .init(count: index + 1, applied: 1))
            #expect(try store.instance(id: "o\(index)")?.lastSequence == 2)
            await host.stopAndWait()
        }
        await first.stopAndWait()
    }

    @Test("past its limit a round written part by part takes in no more writers: those that come back later go in the next round")
    func roundEndsAtItsLimit() async throws {
        let (backend, store) = pullingStore()
        let first = try counter("first", in: store)
        let early = try (0..<5).map { try counter("e\($0)", in: store) }
        let late = try (0..<5).map { try counter("l\($0)", in: store) }

        backend.holdBeforeNextAsk()
        first.rendering.sink.send(.init(amount: 1))
        await backend.untilHolds(1)
        for host in early { host.rendering.sink.send(.init(amount: 1)) }
        // The round began before the hold: after this sleep its limit has passed.
        try await Task.sleep(for: RoundGathering.limit * 4)
        backend.holdBeforeNextAsk()
        backend.open()
        // The round took the early writers as a part; before it asks for another, the late ones come.
        await backend.untilHolds(2)
        for host in late { host.rendering.sink.send(.init(amount: 1)) }
        backend.open()
        for host in [first] + early + late { await host.flush() }
        let commits = backend.commits
        try #require(commits.count >= 2)
        #expect(commits[0].first == ["first"])
        #expect(Set(commits[0].dropFirst().flatMap { $0 }) == Set(early.indices.map { "e\($0)" }), "\(commits)")
        #expect(Set(commits.dropFirst().flatMap { $0.flatMap { $0 } }) == Set(late.indices.map { "l\($0)" }), "\(commits)")
        for host in [first] + early + late {
            #expect(host.failure == nil && host.rendering.state == .init(count: 1, applied: 1))
            await host.stopAndWait()
        }
    }

    @Test("clients that each await every action: every action lands once, in order, in commits whose parts never hold one instance twice")
    func roundsFollowTheirClients() async throws {
        let (backend, store) = pullingStore()
        let hosts = try (0..<8).map { try counter("c\($0)", in: store) }
        let rounds = 40
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for amount in 1...rounds { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
                }
            }
        }
        let commits = backend.commits
        for (index, host) in hosts.enumerated() {
            #expect(host.failure == nil)
            #expect(host.rendering.state == .init(count: rounds * (rounds + 1) / 2, applied: rounds))
            #expect(try store.entries(of: "c\(index)").map(\.sequence) == Array(1...UInt64(rounds + 1)))
            await host.stopAndWait()
        }
        let instances = commits.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        #expect(instances == hosts.count * rounds)
        #expect(commits.allSatisfy { commit in Set(commit.flatMap { $0 }).count == commit.flatMap { $0 }.count },
                "no instance is in two parts of one commit")
    }
}
