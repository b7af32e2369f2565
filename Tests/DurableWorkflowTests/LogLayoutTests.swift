import DurableWorkflow
import LMDB
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB

@Suite("Log layout: the newest instance's commits append and fill their pages")
struct LogLayoutTests {
    /// The (instance key, sequence) of every key of the store's `log`, in order, and its leaf pages.
    func logKeys(_ store: WorkflowStore) throws -> (keys: [(instance: UInt64, sequence: UInt64)], leafPages: Int) {
        let log: Database<[UInt8], [UInt8]> = try store.environment.database(named: "log")
        var keys: [(UInt64, UInt64)] = []
        let leafPages = try store.environment.read { txn throws -> Int in
            try txn.forEach(in: log) { key, _ in
                keys.append((UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)),
                             UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))))
                return true
            }
            return try txn.statistics(of: log).leafPages
        }
        return (keys, leafPages)
    }

    @Test("one instance's grouped commits fill the log's pages, and it resumes")
    func newestInstanceAppends() async throws {
        let dir = TemporaryDirectory("layout-append")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = counterConfiguration(.grouped(maxBatch: 100, maxDelay: .zero))
        let host = try store.start(DurableCounter(), id: "only", configuration: configuration)
        for _ in 1...3_000 { host.rendering.sink.send(.init(amount: 1)) }
        await host.stopAndWait()
        let (keys, leafPages) = try logKeys(store)
        #expect(keys.map(\.sequence) == Array(1...3_001))
        // About 40 entries of this size fit a 4 KB page; pages split in half hold about 20.
        #expect(keys.count / leafPages >= 30, "\(keys.count) keys on \(leafPages) leaf pages")
        let resumed = try store.resume(id: "only", as: DurableCounter.self, configuration: configuration)
        #expect(resumed.rendering.state.count == 3_000)
        resumed.rendering.sink.send(.init(amount: 1))
        await resumed.stopAndWait()
        #expect(try store.instance(id: "only")?.lastSequence == 3_002)
        #expect(try logKeys(store).keys.last?.sequence == 3_002)
    }

    @Test("an instance that is not the newest commits by insert, the newest by append, interleaved; both logs read back whole")
    func olderAndNewerInstancesInterleaved() async throws {
        let dir = TemporaryDirectory("layout-interleaved")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = counterConfiguration(.grouped(maxBatch: 100, maxDelay: .zero))
        let older = try store.start(DurableCounter(), id: "older", configuration: configuration)
        let newer = try store.start(DurableCounter(), id: "newer", configuration: configuration)
        for amount in 1...1_500 {
            older.rendering.sink.send(.init(amount: amount))
            newer.rendering.sink.send(.init(amount: 2 * amount))
        }
        await older.stopAndWait()
        await newer.stopAndWait()
        // Each instance's entries 1...1501; the older instance first.
        let keys = try logKeys(store).keys
        let instances = Array(Set(keys.map(\.instance))).sorted()
        #expect(instances.count == 2)
        for instance in instances {
            #expect(keys.filter { $0.instance == instance }.map(\.sequence) == Array(1...1_501))
        }
        let total = (1...1_500).reduce(0, +)
        for (id, count) in [("older", total), ("newer", 2 * total)] {
            #expect(try store.entries(of: id).map(\.sequence) == Array(1...1_501))
            #expect(try store.entries(of: id, from: 0, through: 2).map(\.sequence) == [1, 2])
            let host = try store.resume(id: id, as: DurableCounter.self, configuration: configuration)
            #expect(host.rendering.state.count == count)
            await host.stopAndWait()
        }
    }
}
