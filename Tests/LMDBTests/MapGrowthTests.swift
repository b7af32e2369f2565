import LMDB
import TestSupport
import Testing

@Suite("Map growth")
struct MapGrowthTests {
    @Test("a store opened with a 64 KiB map grows by itself to hold 200 MB")
    func growsFrom64KiBTo200MB() throws {
        let dir = TemporaryDirectory("grow")
        let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 64 << 10, durability: .noSync))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
        let recordSize = 16 << 10
        let records = UInt64(TestLoad.scaled(200 << 20) / recordSize)
        for batch in stride(from: UInt64(1), through: records, by: 1000) {
            try env.write { txn throws in
                for key in batch..<min(batch + 1000, records + 1) {
                    try txn.append(RecordPattern.bytes(for: key, size: recordSize), forKey: key, in: db)
                }
            }
        }
        #expect(try env.info().mapSize >= TestLoad.scaled(200 << 20))
        try env.read { txn throws in
            #expect(try txn.count(of: db) == Int(records))
            for key in [1, records / 2, records] {
                #expect(try txn.withValue(forKey: key, in: db) { RecordPattern.matches($0, sequence: key, size: recordSize) } == true)
            }
        }
    }

    @Test("one transaction larger than the map grows the map and commits whole")
    func singleLargeTransaction() throws {
        let dir = TemporaryDirectory("grow-one")
        let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 64 << 10, durability: .noSync))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
        var attempts = 0
        try env.write { txn throws in
            attempts += 1
            for key: UInt64 in 1...2000 { try txn.append(RecordPattern.bytes(for: key, size: 2000), forKey: key, in: db) }
        }
        #expect(attempts > 1)
        #expect(try env.read { txn in try txn.count(of: db) } == 2000)
    }

    @Test("a full map at its maximum is a typed error, loses nothing committed, and a larger maximum lifts it")
    func fullAtMaximum() throws {
        let dir = TemporaryDirectory("full")
        var committed: UInt64 = 0
        do {
            let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 64 << 10, maximumMapSize: 1 << 20))
            let db: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
            let error = #expect(throws: LMDBError.self) {
                for key: UInt64 in 1...10_000 {
                    try env.write { txn in try txn.put(RecordPattern.bytes(for: key, size: 4000), forKey: key, in: db) }
                    committed = key
                }
            }
            #expect(error?.kind == .mapFull)
            #expect(error?.path == dir.path)
            #expect(error?.description.contains("maximum") == true)
            #expect(committed > 100)
            #expect(try env.read { txn in try txn.count(of: db) } == Int(committed))
        }
        let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 64 << 10, maximumMapSize: 4 << 20))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
        let next = committed + 1
        try env.write { txn in try txn.put(RecordPattern.bytes(for: next, size: 4000), forKey: next, in: db) }
        try env.read { txn throws in
            #expect(try txn.count(of: db) == Int(next))
            for key in 1...next {
                #expect(try txn.withValue(forKey: key, in: db) { RecordPattern.matches($0, sequence: key, size: 4000) } == true)
            }
        }
    }
}
