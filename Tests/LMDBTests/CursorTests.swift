import LMDB
import TestSupport
import Testing

@Suite("Cursors")
struct CursorTests {
    func makeStore(_ dir: TemporaryDirectory) throws -> (Environment, Database<UInt64, String>) {
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "log")
        try env.write { txn throws in
            for key in stride(from: UInt64(10), through: 100, by: 10) { try txn.append("v\(key)", forKey: key, in: db) }
        }
        return (env, db)
    }

    @Test("forward and backward scans visit every entry in key order")
    func scansInBothDirections() throws {
        let dir = TemporaryDirectory("cursor-scan")
        let (env, db) = try makeStore(dir)
        var forward: [UInt64] = []
        var backward: [UInt64] = []
        try env.read { txn throws in
            try txn.forEachDecoded(in: db) { (key: UInt64, value: String) in
                #expect(value == "v\(key)")
                forward.append(key)
                return true
            }
            try txn.forEachDecoded(in: db, reverse: true) { (key: UInt64, _: String) in backward.append(key); return true }
        }
        #expect(forward == Array(stride(from: 10, through: 100, by: 10)))
        #expect(backward == forward.reversed())
    }

    @Test("seeks land on the exact key, the next larger, or the next smaller")
    func seeks() throws {
        let dir = TemporaryDirectory("cursor-seek")
        let (env, db) = try makeStore(dir)
        try env.read { txn throws in
            try txn.withCursor(on: db) { cursor throws in
                #expect(try cursor.seek(exactly: 30)?.key(as: UInt64.self) == 30)
                #expect(try cursor.seek(exactly: 35) == nil)
                #expect(try cursor.seek(atLeast: 35)?.key(as: UInt64.self) == 40)
                #expect(try cursor.next()?.key(as: UInt64.self) == 50)
                #expect(try cursor.seek(atLeast: 101) == nil)
                #expect(try cursor.seek(atMost: 35)?.key(as: UInt64.self) == 30)
                #expect(try cursor.seek(atMost: 40)?.key(as: UInt64.self) == 40)
                #expect(try cursor.seek(atMost: 5) == nil)
                #expect(try cursor.seek(atMost: 1000)?.key(as: UInt64.self) == 100)
                #expect(try cursor.first()?.value(as: String.self) == "v10")
                #expect(try cursor.previous() == nil)
                #expect(try cursor.last()?.value(as: String.self) == "v100")
                #expect(try cursor.next() == nil)
            }
            var fromMiddle: [UInt64] = []
            try txn.forEachDecoded(in: db, from: 55) { (key: UInt64, _: String) in fromMiddle.append(key); return true }
            #expect(fromMiddle == [60, 70, 80, 90, 100])
            var downFromMiddle: [UInt64] = []
            try txn.forEachDecoded(in: db, from: 55, reverse: true) { (key: UInt64, _: String) in downFromMiddle.append(key); return true }
            #expect(downFromMiddle == [50, 40, 30, 20, 10])
        }
    }

    @Test("deleting through a write cursor removes exactly the entries passed over")
    func deleteThroughCursor() throws {
        let dir = TemporaryDirectory("cursor-delete")
        let (env, db) = try makeStore(dir)
        try env.write { txn throws in
            try txn.withCursor(on: db) { cursor throws in
                var entry = try cursor.first()
                while let current = entry {
                    if try current.key(as: UInt64.self) % 20 == 0 {
                        try cursor.deleteCurrent()
                        entry = try cursor.current()
                    } else {
                        entry = try cursor.next()
                    }
                }
            }
        }
        var left: [UInt64] = []
        try env.read { txn throws in
            try txn.forEachDecoded(in: db) { (key: UInt64, _: String) in left.append(key); return true }
        }
        #expect(left == [10, 30, 50, 70, 90])
    }

    @Test("reserving through a write cursor stores each value where fill wrote it, in or out of order; a bad key is keyTooLong")
    func reserveThroughCursor() throws {
        let dir = TemporaryDirectory("cursor-reserve")
        let (env, _) = try makeStore(dir)
        let raw: Database<UInt64, [UInt8]> = try env.database(named: "log")
        // 5,000 keys after the existing ones (many page splits), then a few between them.
        let keys = Array(UInt64(101)...5_100) + [15, 25, 35]
        let rejected: [LMDBError] = try env.write { txn throws in
            try txn.withCursor(on: raw) { cursor throws in
                for key in keys {
                    let size = Int(key % 7) + 1
                    try cursor.reserve(size, forKey: key) { buffer in
                        for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: key &+ UInt64(index)) }
                    }
                }
            }
            var rejected: [LMDBError] = []
            let strings: Database<String, [UInt8]> = try env.database(named: "log")
            try txn.withCursor(on: strings) { cursor throws in
                for badKey in [String(repeating: "k", count: 512), ""] {
                    do { try cursor.reserve(1, forKey: badKey) { _ in Issue.record("fill ran for a bad key") } }
                    catch let error as LMDBError { rejected.append(error) }
                }
            }
            return rejected
        }
        #expect(rejected.map(\.kind) == [.keyTooLong, .keyTooLong])
        try env.read { txn throws in
            for key in keys {
                let size = Int(key % 7) + 1
                #expect(try txn.get(key, in: raw) == (0..<size).map { UInt8(truncatingIfNeeded: key &+ UInt64($0)) })
            }
            var count = 0
            try txn.forEach(in: raw) { _, _ in count += 1; return true }
            #expect(count == 10 + keys.count)
        }
    }

    @Test("reserving at the end appends in order and fills pages; a key before the last one is refused and nothing is written")
    func reserveAtEnd() throws {
        let dir = TemporaryDirectory("cursor-reserve-end")
        let env = try Environment.open(path: dir.path)
        let appended: Database<UInt64, [UInt8]> = try env.database(named: "appended")
        let inserted: Database<UInt64, [UInt8]> = try env.database(named: "inserted")
        let count: UInt64 = 3_000, size = 100
        func fill(_ key: UInt64) -> (UnsafeMutableRawBufferPointer) -> Void {
            { buffer in for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: key &+ UInt64(index)) } }
        }
        let (refusals, insertedLeaves, appendedLeaves) = try env.write { txn throws -> ([Bool], Int, Int) in
            // The same keys in the same order, once appended, once inserted before a key that
            // stays last (the layout that made every full page split in half).
            try txn.put([0], forKey: UInt64.max, in: inserted)
            try txn.withCursor(on: inserted) { cursor throws in
                for key in 1...count { try cursor.reserve(size, forKey: key, fill(key)) }
            }
            let refusals = try txn.withCursor(on: appended) { cursor throws -> [Bool] in
                for key in 1...count { #expect(try cursor.reserveAtEnd(size, forKey: key, fill(key))) }
                // Before the last key, and equal to it: refused, `fill` never runs.
                return try [count / 2, count].map { key in
                    try cursor.reserveAtEnd(size, forKey: key) { _ in Issue.record("fill ran for a refused append") }
                }
            }
            return (refusals, try txn.statistics(of: inserted).leafPages, try txn.statistics(of: appended).leafPages)
        }
        #expect(refusals == [false, false])
        // Appended pages are full: about half as many as inserted ones.
        #expect(appendedLeaves * 10 < insertedLeaves * 6, "appended \(appendedLeaves) leaves, inserted \(insertedLeaves)")
        try env.read { txn throws in
            #expect(try txn.count(of: appended) == Int(count))
            for key in [1, count / 2, count] {
                #expect(try txn.get(key, in: appended) == (0..<size).map { UInt8(truncatingIfNeeded: key &+ UInt64($0)) })
            }
        }
    }
}
