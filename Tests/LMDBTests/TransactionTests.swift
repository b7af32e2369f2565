import LMDB
import TestSupport
import Testing

@Suite("Transactions")
struct TransactionTests {
    @Test("many records written in one transaction read back equal, by key and by scan")
    func roundTripManyRecords() throws {
        let dir = TemporaryDirectory("roundtrip")
        let env = try Environment.open(path: dir.path)
        let db: Database<String, [UInt8]> = try env.database(named: "kv")
        let keys = (0..<10_000).map { "key-\($0)" }
        try env.write { txn throws in
            for (index, key) in keys.enumerated() {
                try txn.put(RecordPattern.bytes(for: UInt64(index), size: index % 300 + 1), forKey: key, in: db)
            }
        }
        try env.read { txn throws in
            #expect(try txn.count(of: db) == keys.count)
            for (index, key) in keys.enumerated() {
                let value = try #require(try txn.get(key, in: db))
                #expect(value == RecordPattern.bytes(for: UInt64(index), size: index % 300 + 1))
            }
            var scanned = 0
            var previous = ""
            try txn.forEachDecoded(in: db) { (key: String, _: [UInt8]) in
                #expect(key > previous)
                previous = key
                scanned += 1
                return true
            }
            #expect(scanned == keys.count)
        }
    }

    @Test("1,000,000 appends with big-endian keys are all seen, in order, by one full scan")
    func millionAppendsThenScan() throws {
        let dir = TemporaryDirectory("million")
        let env = try Environment.open(path: dir.path, configuration: .init(durability: .noSync))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "log")
        let total: UInt64 = 1_000_000
        let value = [UInt8](repeating: 7, count: 32)
        for batch in stride(from: UInt64(1), through: total, by: 100_000) {
            try env.write { txn throws in
                for sequence in batch..<(batch + 100_000) { try txn.append(value, forKey: sequence, in: db) }
            }
        }
        var expected: UInt64 = 1
        try env.read { txn throws in
            try txn.forEach(in: db) { key, value throws in
                guard try UInt64(lmdbBytes: key) == expected, value.count == 32 else { return false }
                expected += 1
                return true
            }
        }
        #expect(expected == total + 1)
    }

    @Test("a write's closure sees the durability its commit was given and may change it; each commit is made and the next one starts from the given one again")
    func commitDurabilitySetInTheClosure() throws {
        let dir = TemporaryDirectory("commit-durability")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "d")
        try env.write { txn throws in
            #expect(txn.commitDurability == nil)
            txn.commitDurability = .noSync
            #expect(txn.commitDurability == .noSync)
            try txn.put([1], forKey: 1, in: db)
        }
        try env.write(durability: .noMetaSync) { txn throws in
            #expect(txn.commitDurability == .noMetaSync)
            txn.commitDurability = nil
            try txn.put([2], forKey: 2, in: db)
        }
        try env.write { txn throws in
            #expect(txn.commitDurability == nil)
            try txn.put([3], forKey: 3, in: db)
        }
        try env.sync()
        try env.read { txn throws in
            for key in UInt64(1)...3 { #expect(try txn.get(key, in: db) == [UInt8(key)]) }
        }
    }

    @Test("a closure that throws aborts: none of its writes are visible")
    func throwingClosureAborts() throws {
        struct Stop: Error {}
        let dir = TemporaryDirectory("abort")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        try env.write { txn in try txn.put("kept", forKey: 1, in: db) }
        #expect(throws: Stop.self) {
            try env.write { txn throws in
                try txn.put("lost", forKey: 2, in: db)
                try txn.put("overwritten", forKey: 1, in: db)
                throw Stop()
            }
        }
        try env.read { txn throws in
            #expect(try txn.get(1, in: db) == "kept")
            #expect(try txn.get(2, in: db) == nil)
        }
    }

    @Test("insert refuses an existing key; delete reports presence; removeAll empties")
    func insertDeleteRemoveAll() throws {
        let dir = TemporaryDirectory("insert")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        try env.write { txn throws in
            #expect(try txn.insert("a", forKey: 1, in: db))
            #expect(try !txn.insert("b", forKey: 1, in: db))
            #expect(try txn.get(1, in: db) == "a")
            #expect(try txn.delete(1, in: db))
            #expect(try !txn.delete(1, in: db))
            for key: UInt64 in 1...10 { try txn.put("v", forKey: key, in: db) }
            try txn.removeAll(in: db)
            #expect(try txn.count(of: db) == 0)
        }
    }

    @Test("append rejects a key that does not sort after the last one")
    func appendOutOfOrder() throws {
        let dir = TemporaryDirectory("append-order")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "log")
        try env.write { txn in try txn.append("ten", forKey: 10, in: db) }
        expectLMDBError(.badValue) {
            try env.write { txn in try txn.append("five", forKey: 5, in: db) }
        }
        #expect(try env.read { txn in try txn.count(of: db) } == 1)
    }

    @Test("reserve writes a value in place; withValue reads it without copying")
    func reserveAndZeroCopyRead() throws {
        let dir = TemporaryDirectory("reserve")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "log")
        try env.write { txn throws in
            try txn.reserve(100, forKey: 1, in: db, append: true) { buffer in
                buffer.copyBytes(from: RecordPattern.bytes(for: 1))
            }
        }
        let matches = try env.read { txn throws in
            try txn.withValue(forKey: 1, in: db) { RecordPattern.matches($0, sequence: 1) }
        }
        #expect(matches == true)
    }

    @Test("writes from 50 concurrent tasks all commit, with no deadlock")
    func concurrentAsyncWrites() async throws {
        let dir = TemporaryDirectory("concurrent")
        let env = try Environment.open(path: dir.path, configuration: .init(durability: .noSync))
        let db: Database<UInt64, String> = try env.database(named: "kv")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    for index in 0..<40 {
                        let key = UInt64(task * 1000 + index)
                        try await env.write { txn in try txn.put("task \(task)", forKey: key, in: db) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try env.read { txn in try txn.count(of: db) } == 2000)
    }

    @Test("a write transaction's id becomes lastTransactionID when it commits")
    func transactionIDs() throws {
        let dir = TemporaryDirectory("txnid")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        let before = env.lastTransactionID
        let id = try env.write { txn throws in
            try txn.put("x", forKey: 1, in: db)
            return txn.id
        }
        #expect(id == before + 1)
        #expect(env.lastTransactionID == id)
    }
}
