import Foundation
import LMDB
import TestSupport
import Testing

@Suite("Two processes on one store")
struct MultiProcessTests {
    @Test("a store another process is creating is opened once it is created, not taken for a damaged file")
    func openWhileAnotherProcessCreates() throws {
        let source = TemporaryDirectory("create-source"), dir = TemporaryDirectory("create-target")
        let child = try ChildProcess(["lmdb-create-slowly", source.path, dir.path])
        #expect(child.readLine() == "creating")
        // LMDB's open waits for the creating process's lock; the data file is checked after it.
        let env = try Environment.open(path: dir.path)
        let db: Database<String, [UInt8]> = try env.database(named: "records")
        #expect(try env.read { txn in try txn.get("made", in: db) } == [7])
        #expect(child.readLine() == "created")
        #expect(try child.waitForExit() == 0)
    }

    @Test("the parent sees each of a child's commits through lastTransactionID, with its records")
    func parentSeesChildCommits() throws {
        let dir = TemporaryDirectory("two-proc")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let child = try ChildProcess(["lmdb-append-slowly", dir.path, "40", "15"])
        #expect(child.readLine() == "ready")
        // The reliable pattern: remember the id of the snapshot last read, and read again when
        // lastTransactionID is past it (see Environment.lastTransactionID).
        var lastReadID: UInt64 = 0
        var observedCounts: [Int] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while observedCounts.last != 40 && ContinuousClock.now < deadline {
            guard env.lastTransactionID > lastReadID else { usleep(200); continue }
            let count = try env.read { txn throws in
                lastReadID = txn.id
                var expected: UInt64 = 1
                try txn.forEach(in: db) { key, value throws in
                    #expect(try UInt64(lmdbBytes: key) == expected)
                    #expect(RecordPattern.matches(value, sequence: expected))
                    expected += 1
                    return true
                }
                return Int(expected - 1)
            }
            observedCounts.append(count)
        }
        #expect(try child.waitForExit() == 0)
        #expect(observedCounts.last == 40)
        #expect(observedCounts == observedCounts.sorted())
        // One change seen per commit, give or take commits that landed between two polls.
        #expect(observedCounts.count >= 20)
    }

    @Test("a map grown by another process is adopted by this one (MDB_MAP_RESIZED)")
    func adoptsAnotherProcessGrowth() throws {
        let dir = TemporaryDirectory("resized")
        let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 64 << 10))
        let records: Database<UInt64, [UInt8]> = try env.database(named: "records")
        try env.write { txn in try txn.put([1], forKey: 1, in: records) }
        let child = try ChildProcess(["lmdb-fill", dir.path, "8"])
        let line = child.readLine() ?? ""
        #expect(try child.waitForExit() == 0, "child said: \(line)")
        let bulk: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
        try env.read { txn throws in
            #expect(try txn.count(of: bulk) == 8 * 16)
            #expect(try txn.withValue(forKey: 128, in: bulk) { RecordPattern.matches($0, sequence: 128, size: 64 << 10) } == true)
        }
        try env.write { txn in try txn.put([2], forKey: 2, in: records) }
        #expect(try env.info().mapSize >= 8 << 20)
    }

    @Test("a reader process killed while holding a read transaction leaves no slot and blocks nothing")
    func killedReaderIsCleared() throws {
        let dir = TemporaryDirectory("dead-reader")
        do {
            let env = try Environment.open(path: dir.path)
            let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
            try env.write { txn in try txn.put([1], forKey: 1, in: db) }
        }
        let reader = try ChildProcess(["lmdb-hold-read", dir.path])
        let line = reader.readLine() ?? ""
        #expect(line.hasPrefix("holding 1 1"), "reader said: \(line)")
        reader.kill()
        try reader.waitForExit()

        let env = try Environment.open(path: dir.path)
        #expect(try env.info().readersInUse == 0)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        // Pages freed by later writes are reused: churn a key many times and the file stays small.
        for round in 0..<200 {
            try env.write { txn in try txn.put(RecordPattern.bytes(for: UInt64(round), size: 3000), forKey: 2, in: db) }
        }
        #expect(try env.info().usedBytes < 64 * 4096)
    }
}
