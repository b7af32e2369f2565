import DurableWorkflow
import Foundation
import LMDB
import Logging
import TestSupport
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks

// Two builds of one workflow, "Deploy.Ledger", as a deploy meets them: the same name, tags and
// keys, and a change in between (rule D11; issue 58, point 1).

/// The first build: a total and a count of entries.
struct LedgerV1: Workflow, Codable, Sendable {
    static let workflowName = "Deploy.Ledger"

    struct State: Codable, Equatable { var total = 0; var entries = 0 }

    struct Add: DurableAction {
        typealias WorkflowType = LedgerV1
        static let tag = "ledger.add"
        var amount: Int
        func apply(toState state: inout State) -> Never? {
            state.total += amount
            state.entries += 1
            return nil
        }
    }

    func makeInitialState() -> State { State() }
    func render(state: State, context: RenderContext<LedgerV1>) -> (State, Sink<Add>) { (state, context.makeSink(of: Add.self)) }
    static var configuration: DurableConfiguration { DurableConfiguration(actions: ActionRegistry(Add.self), snapshotEvery: 5) }
}

/// The second build: a new non-optional field, which the first build's snapshots lack.
struct LedgerV2: Workflow, Codable, Sendable {
    static let workflowName = "Deploy.Ledger"

    struct State: Codable, Equatable { var total = 0; var entries = 0; var priority = 3 }

    struct Add: DurableAction {
        typealias WorkflowType = LedgerV2
        static let tag = "ledger.add"
        var amount: Int
        func apply(toState state: inout State) -> Never? {
            state.total += amount
            state.entries += 1
            return nil
        }
    }

    func makeInitialState() -> State { State() }
    func render(state: State, context: RenderContext<LedgerV2>) -> (State, Sink<Add>) { (state, context.makeSink(of: Add.self)) }
    static var configuration: DurableConfiguration { DurableConfiguration(actions: ActionRegistry(Add.self), snapshotEvery: 5) }
}

/// A shelf that renders a bin under a key; the first build says "packing", the second "pack".
struct Shelf<Build: ShelfBuild>: Workflow, Codable, Sendable {
    static var workflowName: String { "Deploy.Shelf" }

    struct Bin: Workflow, Codable, Sendable {
        static var workflowName: String { "Deploy.Bin" }
        struct Put: DurableAction {
            typealias WorkflowType = Bin
            static var tag: String { "bin.put" }
            func apply(toState state: inout Int) -> Never? {
                state += 1
                return nil
            }
        }
        func makeInitialState() -> Int { 0 }
        func render(state: Int, context: RenderContext<Bin>) -> (Int, Sink<Put>) { (state, context.makeSink(of: Put.self)) }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Shelf>) -> (Int, Sink<Bin.Put>) {
        context.render(Bin(), key: Build.binKey)
    }
    static var configuration: DurableConfiguration { DurableConfiguration(actions: ActionRegistry(Bin.Put.self), snapshotEvery: 4) }
}

protocol ShelfBuild: Sendable { static var binKey: String { get } }
enum ShelfV1: ShelfBuild { static var binKey: String { "packing" } }
enum ShelfV2: ShelfBuild { static var binKey: String { "pack" } }

/// A swift-log handler that keeps warnings (and worse) in memory.
final class KeptWarnings: LogHandler, Sendable {
    private let kept = Lock<[String]>([])
    var messages: [String] { kept.withLock { $0 } }
    var logLevel: Logger.Level {
        get { .warning }
        set {}
    }
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        kept.withLock { $0.append("\(event.message) \(metadata)") }
    }
}

@Suite("A snapshot the new build cannot use is never taken for the initial state (D11)")
struct SnapshotSafetyTests {
    /// Instance "l" of the first build with `amounts` added: a snapshot every 5 entries.
    func startLedger(_ dir: TemporaryDirectory, amounts: [Int]) throws {
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(LedgerV1(), id: "l", configuration: LedgerV1.configuration)
        for amount in amounts { host.rendering.1.send(.init(amount: amount)) }
        host.stop()
    }

    @Test("a snapshot at the log's last entry that the new state type cannot decode: the whole log is replayed, and its recorded digests stop the resume with a typed error (the state is never reset)")
    func lastEntrySnapshotFailsTyped() throws {
        let dir = TemporaryDirectory("snapshot-last")
        try startLedger(dir, amounts: [10, 20, 30, 40])
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instance(id: "l")?.lastSnapshot == 5)
        #expect(try store.instance(id: "l")?.lastSequence == 5)
        let error = expectDurableError(.nonDeterministic) {
            let host = try store.resume(id: "l", as: LedgerV2.self, configuration: LedgerV2.configuration)
            Issue.record("resumed with \(host.rendering.0) instead of failing")
            host.stop()
        }
        // The whole log was replayed: the divergence is at the first entry's digest, not after the snapshot.
        #expect(error?.sequence == 2)
        #expect(error?.detail.contains("snapshot at 5") == true, "\(String(describing: error))")
        // Only the hash-order case is told to turn digest checks off.
        #expect(error?.description.contains("checksRecordedDigests") == false, "\(String(describing: error))")
        #expect(try store.instance(id: "l")?.status == .running)
        // The first build still resumes it from its snapshot, as it was.
        let host = try store.resume(id: "l", as: LedgerV1.self, configuration: LedgerV1.configuration)
        #expect(host.rendering.0 == LedgerV1.State(total: 100, entries: 4))
        host.stop()
    }

    @Test("with digest checks off, an instance whose snapshot does not decode is rebuilt from its whole log by the new build, and the fallback is logged")
    func undecodableSnapshotReplaysTheLog() throws {
        let dir = TemporaryDirectory("snapshot-replay")
        try startLedger(dir, amounts: [10, 20, 30, 40, 50, 60])
        let warnings = KeptWarnings()
        var configuration = LedgerV2.configuration
        configuration.checksRecordedDigests = false
        configuration.logger = Logger(label: "test") { _ in warnings }
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instance(id: "l")?.lastSnapshot == 5)
        let host = try store.resume(id: "l", as: LedgerV2.self, configuration: configuration)
        #expect(host.rendering.0 == LedgerV2.State(total: 210, entries: 6, priority: 3))
        host.rendering.1.send(.init(amount: 1))
        #expect(host.rendering.0.total == 211)
        host.stop()
        #expect(warnings.messages.contains { $0.contains("a snapshot does not fit this build") && $0.contains("instance=l") && $0.contains("snapshot=5") },
                "\(warnings.messages)")
        // Time travel and the snapshot at 5 read the same from the log.
        let atFive = try store.state(of: "l", as: LedgerV2.self, at: 5, configuration: configuration)
        #expect(try atFive.rootState(as: LedgerV2.State.self) == LedgerV2.State(total: 100, entries: 4, priority: 3))
        // verify: consistent, and it says the snapshot does not fit.
        let report = try store.verify(id: "l", as: LedgerV2.self, configuration: configuration)
        #expect(report.isConsistent)
        #expect(report.unusableSnapshot?.contains("does not decode") == true, "\(String(describing: report.unusableSnapshot))")
        // A new snapshot, taken by this build, is used from then on.
        try store.snapshot(id: "l", as: LedgerV2.self, configuration: configuration)
        #expect(try store.verify(id: "l", as: LedgerV2.self, configuration: configuration).unusableSnapshot == nil)
    }

    @Test("a snapshot whose children the new build's render declares under another key is not used: the log's entries for the old key stop replay with a message naming both keys")
    func renamedChildKey() throws {
        let dir = TemporaryDirectory("snapshot-child-key")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let host = try store.start(Shelf<ShelfV1>(), id: "s", configuration: Shelf<ShelfV1>.configuration)
            for _ in 0..<3 { host.rendering.1.send(.init()) }
            host.stop()
            #expect(try store.instance(id: "s")?.lastSnapshot == 4)
        }
        var configuration = Shelf<ShelfV2>.configuration
        configuration.checksRecordedDigests = false
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.replayMismatch) {
            let host = try store.resume(id: "s", as: Shelf<ShelfV2>.self, configuration: configuration)
            Issue.record("resumed with the bin at \(host.rendering.0) instead of failing")
            host.stop()
        }
        #expect(error?.sequence == 2)
        #expect(error?.detail.contains("\"pack\"") == true && error?.detail.contains("\"packing\"") == true, "\(String(describing: error))")
        #expect(error?.detail.contains("snapshot at 4") == true, "\(String(describing: error))")
    }

    @Test("an undecodable snapshot over a log with a damaged entry before it is snapshotUndecodable, naming the instance, the snapshot's sequence, the type and the decoding error")
    func snapshotUndecodableWhenTheLogIsNotWhole() throws {
        let dir = TemporaryDirectory("snapshot-undecodable")
        try startLedger(dir, amounts: [10, 20, 30, 40, 50])
        do {
            let env = try Environment.open(path: dir.path)
            let log: Database<[UInt8], [UInt8]> = try env.database(named: "log")
            // Instance "l" has key 1: flip one byte of entry 3's payload.
            let key: [UInt8] = withUnsafeBytes(of: UInt64(1).bigEndian) { Array($0) } + withUnsafeBytes(of: UInt64(3).bigEndian) { Array($0) }
            try env.write { txn in
                var bytes = try #require(try txn.get(key, in: log))
                bytes[bytes.count - 12] ^= 0x40
                try txn.put(bytes, forKey: key, in: log)
            }
        }
        let store = try WorkflowStore.open(path: dir.path)
        var configuration = LedgerV2.configuration
        configuration.checksRecordedDigests = false
        let error = expectDurableError(.snapshotUndecodable) {
            _ = try store.resume(id: "l", as: LedgerV2.self, configuration: configuration)
        }
        #expect(error?.instance == "l")
        #expect(error?.sequence == 5)
        let text = error?.description ?? ""
        #expect(text.contains("LedgerV2.State") && text.contains("priority") && text.contains("entry 3"), "\(text)")
        // The build that wrote the snapshot still resumes it from there.
        let host = try store.resume(id: "l", as: LedgerV1.self, configuration: LedgerV1.configuration)
        #expect(host.rendering.0 == LedgerV1.State(total: 150, entries: 5))
        host.stop()
    }
}
