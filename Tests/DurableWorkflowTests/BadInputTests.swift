import DurableWorkflow
import Foundation
import LMDB
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks

/// A workflow whose render depends on a random number: replay cannot reproduce it.
struct RandomShape: Workflow, Codable, Sendable {
    struct Leaf: Workflow, Sendable {
        func makeInitialState() -> Int { 0 }
        func render(state: Int, context: RenderContext<Leaf>) -> Int { state }
    }

    struct Bump: DurableAction {
        typealias WorkflowType = RandomShape
        func apply(toState state: inout Int) -> Never? {
            state += 1
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<RandomShape>) -> Sink<Bump> {
        _ = context.render(Leaf(), key: String(Int.random(in: 0..<1_000_000_000)))
        return context.makeSink(of: Bump.self)
    }
}

/// A durable workflow that (wrongly) sends an action that is not a DurableAction.
struct Leaky: Workflow, Codable, Sendable {
    struct Plain: WorkflowAction {
        typealias WorkflowType = Leaky
        func apply(toState state: inout Int) -> Never? {
            state += 1
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Leaky>) -> (Int, Sink<Plain>) { (state, context.makeSink(of: Plain.self)) }
}

@Suite("Durable bad input: typed errors naming instance and sequence, nothing lost")
struct DurableBadInputTests {
    /// A store with instances "bad" and "good", 5 actions each.
    func makeStore(_ dir: TemporaryDirectory) throws {
        let store = try WorkflowStore.open(path: dir.path)
        for id in ["bad", "good"] {
            let host = try store.start(DurableCounter(), id: id, configuration: counterConfiguration())
            for amount in 1...5 { host.rendering.sink.send(.init(amount: amount)) }
            host.stop()
        }
    }

    func expectGoodStillWorks(_ store: WorkflowStore) throws {
        let good = try store.resume(id: "good", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(good.rendering.state.count == 15)
        good.rendering.sink.send(.init(amount: 1))
        #expect(good.rendering.state.count == 16)
        good.stop()
    }

    @Test("an unknown action tag stops replay of that instance with a typed error, and loses nothing")
    func unknownTag() throws {
        let dir = TemporaryDirectory("bad-tag")
        try makeStore(dir)
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.unknownActionType) {
            _ = try store.resume(id: "bad", as: DurableCounter.self, configuration: DurableConfiguration())
        }
        #expect(error?.instance == "bad")
        #expect(error?.sequence == 2)
        #expect(error?.actionTag == "counter.add")
        #expect(error?.description.contains("Register") == true)
        #expect(try store.entries(of: "bad").count == 6)
        try expectGoodStillWorks(store)
    }

    @Test("a payload that does not decode is a typed error naming the sequence; an old-version decoder fixes it")
    func undecodablePayload() throws {
        struct Broken: Error {}
        let dir = TemporaryDirectory("bad-payload")
        try makeStore(dir)
        let store = try WorkflowStore.open(path: dir.path)
        var actions = ActionRegistry()
        actions.register(DurableCounter.Add.self, version: 1) { _, _ in throw Broken() }
        let error = expectDurableError(.undecodablePayload) {
            _ = try store.resume(id: "bad", as: DurableCounter.self, configuration: DurableConfiguration(actions: actions))
        }
        #expect(error?.sequence == 2)
        // A decoder registered for the old version reads its encoding into today's action.
        struct LegacyAdd: Decodable { let amount: Int }
        let probe = "migration-\(dir.path)"
        var migrated = ActionRegistry()
        migrated.register(DurableCounter.Add.self, version: 1) { bytes, codec in
            Probe.record(probe, "decoded")
            return DurableCounter.Add(amount: try codec.decode(LegacyAdd.self, from: bytes).amount)
        }
        let host = try store.resume(id: "bad", as: DurableCounter.self, configuration: DurableConfiguration(actions: migrated))
        #expect(host.rendering.state.count == 15)
        #expect(Probe.events(probe).count == 5)
    }

    @Test("an entry whose bytes were corrupted on disk is detected by its checksum, naming the sequence")
    func corruptedBytes() throws {
        let dir = TemporaryDirectory("bad-bytes")
        try makeStore(dir)
        let store = try WorkflowStore.open(path: dir.path)
        let env = try Environment.open(path: dir.path)
        let log: Database<[UInt8], [UInt8]> = try env.database(named: "log")
        // Instance "bad" has key 1; flip one byte of entry 3's payload.
        let key: [UInt8] = withUnsafeBytes(of: UInt64(1).bigEndian) { Array($0) } + withUnsafeBytes(of: UInt64(3).bigEndian) { Array($0) }
        try env.write { txn in
            var bytes = try #require(try txn.get(key, in: log))
            bytes[bytes.count - 12] ^= 0x40
            try txn.put(bytes, forKey: key, in: log)
        }
        let error = expectDurableError(.corruptEntry) {
            _ = try store.resume(id: "bad", as: DurableCounter.self, configuration: counterConfiguration())
        }
        #expect(error?.instance == "bad")
        #expect(error?.sequence == 3)
        #expect(try store.instance(id: "bad")?.lastSequence == 6)
        try expectGoodStillWorks(store)
    }

    @Test("an entry whose stored size was damaged on its page is a typed error naming instance and sequence, not a crash (issue 22, 5)")
    func damagedNodeSize() throws {
        let dir = TemporaryDirectory("bad-node-size")
        try makeStore(dir)
        // Instance "bad" has key 1: make entry 3's stored size run far past the file's end.
        let damaged = try PageDamage.growStoredSize(ofKey: PageDamage.logKey(instance: 1, sequence: 3), inDataFile: dir.child("data.mdb"))
        #expect(damaged >= 1)
        let child = try ChildProcess(["resume-counter", dir.path, "bad"], mergeStandardError: true)
        let output = child.readRemainingLines().joined(separator: "\n")
        #expect(try child.waitForExit() == 0, "the resume crashed: \(output)")
        #expect(output.hasPrefix("error corruptEntry sequence 3: "), "\(output)")
        #expect(output.contains("instance bad"))
        let store = try WorkflowStore.open(path: dir.path)
        try expectGoodStillWorks(store)
    }

    @Test("a store written by a newer format is refused with a clear error")
    func newerFormat() throws {
        let dir = TemporaryDirectory("bad-format")
        try makeStore(dir)
        do {
            let env = try Environment.open(path: dir.path)
            let meta: Database<String, [UInt8]> = try env.database(named: "meta")
            try env.write { txn in try txn.put([99, 0, 0, 0], forKey: "format", in: meta) }
        }
        let error = expectDurableError(.newerFormat) { _ = try WorkflowStore.open(path: dir.path) }
        #expect(error?.description.contains("format 99") == true)
        #expect(error?.store == dir.path)
    }

    @Test("a non-deterministic workflow is reported at the first diverging sequence with both digests")
    func nonDeterministic() throws {
        let dir = TemporaryDirectory("bad-random")
        try makeStore(dir)
        let configuration = DurableConfiguration(actions: ActionRegistry(RandomShape.Bump.self))
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let host = try store.start(RandomShape(), id: "random", configuration: configuration)
            host.rendering.send(RandomShape.Bump())
            host.rendering.send(RandomShape.Bump())
            host.stop()
        }
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.nonDeterministic) {
            _ = try store.resume(id: "random", as: RandomShape.self, configuration: configuration)
        }
        #expect(error?.sequence == 2)
        #expect(error?.nodePath == "/RandomShape")
        #expect(error?.description.contains("differs from the recorded") == true)
        let report = try store.verify(id: "random", as: RandomShape.self, configuration: configuration)
        #expect(report.problem?.kind == .nonDeterministic)
        #expect(try store.entries(of: "random").count == 3)
        try expectGoodStillWorks(store)
    }

    @Test("an action that is not a DurableAction is refused before it is applied, with a typed error; the host goes on")
    func actionNotDurable() async throws {
        let dir = TemporaryDirectory("bad-plain")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Leaky(), id: "leaky")
        let error = await #expect(throws: SendError.self) { try await host.rendering.1.sendAndCommit(Leaky.Plain()) }
        #expect(error?.reason == .notLoggable)
        #expect((error?.underlying as? DurableError)?.kind == .actionNotDurable)
        host.rendering.1.send(Leaky.Plain())
        #expect(host.failure == nil)
        #expect(host.rendering.0 == 0)
        #expect(try store.entries(of: "leaky").count == 1)
        await host.stopAndWait()
    }

    @Test("an action type the registry cannot decode is refused when it is sent, not at the next restart; the host goes on")
    func actionNotRegistered() async throws {
        let dir = TemporaryDirectory("bad-unregistered")
        let store = try WorkflowStore.open(path: dir.path)
        let recorder = DiscardRecorder()
        var configuration = DurableConfiguration(actions: ActionRegistry())
        configuration.host.observers = [recorder]
        let host = try store.start(DurableCounter(), id: "unregistered", configuration: configuration)
        let error = await #expect(throws: SendError.self) { try await host.rendering.sink.sendAndCommit(.init(amount: 2)) }
        let durable = try #require(error?.underlying as? DurableError)
        #expect(durable.kind == .actionNotRegistered)
        #expect(durable.instance == "unregistered")
        #expect(durable.actionTag == "counter.add")
        #expect(durable.description.contains("register"))
        #expect(recorder.reasons == [.notLoggable])
        #expect(host.failure == nil)
        #expect(host.rendering.state.count == 0)
        #expect(try store.entries(of: "unregistered").count == 1)
        await host.stopAndWait()
        // With the registration, the same instance takes the action and resumes after it.
        let fixed = try store.resume(id: "unregistered", as: DurableCounter.self, configuration: counterConfiguration())
        try await fixed.rendering.sink.sendAndCommit(.init(amount: 2))
        await fixed.stopAndWait()
        let resumed = try store.resume(id: "unregistered", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(resumed.rendering.state.count == 2)
        await resumed.stopAndWait()
    }

    @Test("resuming with the wrong workflow type is a typed error")
    func wrongType() throws {
        let dir = TemporaryDirectory("bad-type")
        try makeStore(dir)
        let store = try WorkflowStore.open(path: dir.path)
        expectDurableError(.wrongWorkflowType) { _ = try store.resume(id: "good", as: Leaky.self) }
    }
}

@Suite("Many instances in one store (D6)")
struct ManyInstancesTests {
    @Test("10,000 instances in one store are each resumed correctly after a restart")
    func tenThousandInstances() throws {
        let dir = TemporaryDirectory("many")
        let configuration = counterConfiguration(.processCrashSafe, snapshotEvery: nil)
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for index in 0..<TestLoad.scaled(10_000) {
                let host = try store.start(DurableCounter(step: index % 7 + 1), id: "i\(index)", configuration: configuration)
                host.rendering.sink.send(.init(amount: index % 13))
                host.stop()
            }
            try store.sync()
        }
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instances().count == TestLoad.scaled(10_000))
        for index in 0..<TestLoad.scaled(10_000) {
            let host = try store.resume(id: "i\(index)", as: DurableCounter.self, configuration: configuration)
            #expect(host.rendering.state.count == (index % 13) * (index % 7 + 1), "instance \(index)")
            host.stop()
        }
    }
}

/// Keeps the reasons of discarded actions.
final class DiscardRecorder: WorkflowObserver, Sendable {
    private let seen = Lock<[DiscardReason]>([])
    var reasons: [DiscardReason] { seen.withLock { $0 } }
    func actionDiscarded(_ action: DiscardedAction) { seen.withLock { $0.append(action.reason) } }
}
