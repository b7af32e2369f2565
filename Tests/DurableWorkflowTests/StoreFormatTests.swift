import DurableWorkflow
import LMDB
import TestSupport
import TestWorkflows
import Testing
import Workflow

@Suite("Store format: the index state before each log, migrated from format 1")
struct StoreFormatTests {
    /// The raw `log` database of the store at `path` and the (instance key, sequence) of every key.
    func logKeys(_ env: Environment) throws -> [(instance: UInt64, sequence: UInt64)] {
        let log: Database<[UInt8], [UInt8]> = try env.database(named: "log")
        var keys: [(UInt64, UInt64)] = []
        try env.read { txn throws in
            try txn.forEach(in: log) { key, _ in
                keys.append((UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)),
                             UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))))
                return true
            }
        }
        return keys
    }

    func key(_ instance: UInt64, _ sequence: UInt64) -> [UInt8] {
        withUnsafeBytes(of: (instance.bigEndian, sequence.bigEndian)) { Array($0) }
    }

    @Test("a format-1 store (index state after the log) is refused read-only and migrated at its first writable open; nothing is lost")
    func migratesFormatOne() throws {
        let dir = TemporaryDirectory("format-1")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for (id, amounts) in [("a", 1...5), ("b", 10...12)] {
                let host = try store.start(DurableCounter(), id: id, configuration: counterConfiguration())
                for amount in amounts { host.rendering.sink.send(.init(amount: amount)) }
                host.stop()
            }
        }
        // Turn it into what format 1 wrote: each index state at (key, UInt64.max), format 1.
        do {
            let env = try Environment.open(path: dir.path)
            let log: Database<[UInt8], [UInt8]> = try env.database(named: "log")
            let meta: Database<String, [UInt8]> = try env.database(named: "meta")
            let states = try logKeys(env).filter { $0.sequence == 0 }.map(\.instance)
            #expect(states.count == 2)
            try env.write { txn throws in
                for instance in states {
                    let state = try #require(try txn.get(key(instance, 0), in: log))
                    try txn.put(state, forKey: key(instance, .max), in: log)
                    #expect(try txn.delete(key(instance, 0), in: log))
                }
                try txn.put([1, 0, 0, 0], forKey: "format", in: meta)
            }
        }
        let readOnly = expectDurableError(.storage) { _ = try WorkflowStore.open(path: dir.path, configuration: .readOnly) }
        #expect(readOnly?.description.contains("older format 1") == true)

        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instances().map(\.lastSequence).sorted() == [4, 6])
        #expect(try store.entries(of: "a").map(\.sequence) == Array(1...6))
        let a = try store.resume(id: "a", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(a.rendering.state.count == 15)
        a.rendering.sink.send(.init(amount: 100))
        a.stop()
        let b = try store.resume(id: "b", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(b.rendering.state.count == 33)
        b.stop()
        #expect(try store.state(of: "a", as: DurableCounter.self, configuration: counterConfiguration()).rootState(as: DurableCounter.State.self).count == 115)
        #expect(try store.instance(id: "a")?.lastSequence == 7)
        #expect(try store.statistics().formatVersion == 2)

        let keys = try logKeys(store.environment)
        #expect(keys.filter { $0.sequence == .max }.isEmpty, "format 1's index states are gone")
        #expect(keys.filter { $0.sequence == 0 }.count == 2)
    }

    @Test("an instance that is not the newest commits by insert, the newest by append; both logs read back whole")
    func olderAndNewerInstancesInterleaved() throws {
        let dir = TemporaryDirectory("format-interleaved")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = counterConfiguration(.grouped(maxBatch: 100, maxDelay: .zero))
        let older = try store.start(DurableCounter(), id: "older", configuration: configuration)
        let newer = try store.start(DurableCounter(), id: "newer", configuration: configuration)
        for amount in 1...1_500 {
            older.rendering.sink.send(.init(amount: amount))
            newer.rendering.sink.send(.init(amount: 2 * amount))
        }
        older.stop()
        newer.stop()
        let total = (1...1_500).reduce(0, +)
        for (id, count) in [("older", total), ("newer", 2 * total)] {
            #expect(try store.entries(of: id).map(\.sequence) == Array(1...1_501))
            // Sequence 0 is the index state, never an entry.
            #expect(try store.entries(of: id, from: 0, through: 2).map(\.sequence) == [1, 2])
            let host = try store.resume(id: id, as: DurableCounter.self, configuration: configuration)
            #expect(host.rendering.state.count == count)
            host.stop()
        }
    }
}
