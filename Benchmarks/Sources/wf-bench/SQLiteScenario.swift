import Foundation
import GRDB

/// The peer a user would pick instead: the same event-log records (100 bytes, keyed by instance
/// and sequence) in SQLite through GRDB, WAL mode, synchronous FULL and NORMAL.
enum SQLiteScenario {
    static let name = "sqlite"
    static let recordSize = 100

    static func open(_ path: String, synchronous: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path)
        // GRDB sets synchronous itself when it opens a pool in WAL mode, so set ours on the
        // writer connection afterwards, and check it is the one in force.
        let inForce = try pool.writeWithoutTransaction { db -> Int in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        precondition(inForce == (synchronous == "FULL" ? 2 : 1), "PRAGMA synchronous = \(synchronous) did not take effect (\(inForce))")
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS log (instance INTEGER NOT NULL, sequence INTEGER NOT NULL, payload BLOB NOT NULL,
                PRIMARY KEY (instance, sequence)) WITHOUT ROWID
                """)
        }
        return pool
    }

    static func run(runs: Int, scale: Double, ceilings: [String: Measurement]) throws -> [Measurement] {
        let payload = Data(repeating: 0xAB, count: recordSize)
        var results: [Measurement] = []

        func appends(_ caseName: String, synchronous: String, perCommit: Int, commits: Int, ceiling: String, detail: String) throws {
            let dir = try temporaryStore("sqlite-\(caseName)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let pool = try open(dir + "/log.sqlite", synchronous: synchronous)
            var next: Int64 = 1
            var result = try Measurement.measure(name, caseName, metric: "appends_per_s", runs: runs, detail: detail) {
                let elapsed = try seconds {
                    for _ in 0..<commits {
                        try pool.write { db in
                            let insert = try db.cachedStatement(sql: "INSERT INTO log (instance, sequence, payload) VALUES (1, ?, ?)")
                            for _ in 0..<perCommit {
                                try insert.execute(arguments: [next, payload])
                                next += 1
                            }
                        }
                    }
                }
                return Double(perCommit * commits) / elapsed
            }
            if let ceiling = ceilings[ceiling] { result = result.relative(to: ceiling) }
            results.append(result)
        }
        try appends("commit-full", synchronous: "FULL", perCommit: 1, commits: max(20, Int(200 * scale)), ceiling: "commit-strict",
                    detail: "1 insert per transaction, WAL, synchronous FULL (vs LMDB strict)")
        try appends("commit-normal", synchronous: "NORMAL", perCommit: 1, commits: Int(20_000 * scale), ceiling: "commit-nosync",
                    detail: "1 insert per transaction, WAL, synchronous NORMAL: no fsync per commit (vs LMDB nosync)")
        try appends("batch100-full", synchronous: "FULL", perCommit: 100, commits: max(5, Int(50 * scale)), ceiling: "batch100-strict",
                    detail: "100 inserts per transaction, WAL, synchronous FULL")
        try appends("append-1txn", synchronous: "NORMAL", perCommit: Int(200_000 * scale), commits: 1, ceiling: "append-1txn",
                    detail: "\(Int(200_000 * scale)) inserts in one transaction")

        // Replay scan of one instance's log.
        let dir = try temporaryStore("sqlite-scan")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pool = try open(dir + "/log.sqlite", synchronous: "NORMAL")
        let entries = Int(1_000_000 * scale)
        try pool.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO log (instance, sequence, payload) VALUES (1, ?, ?)")
            for sequence in 1...entries { try insert.execute(arguments: [Int64(sequence), payload]) }
        }
        var scan = try Measurement.measure(name, "scan", metric: "entries_per_s", runs: runs,
                                           detail: "SELECT payload ORDER BY sequence over \(entries) entries") {
            var bytes = 0
            let elapsed = try seconds {
                try pool.read { db in
                    let rows = try Row.fetchCursor(db, sql: "SELECT payload FROM log WHERE instance = 1 ORDER BY sequence")
                    while let row = try rows.next() {
                        let data: Data = row[0]
                        bytes &+= data.count
                    }
                }
            }
            precondition(bytes == entries * recordSize)
            return Double(entries) / elapsed
        }
        if let ceiling = ceilings["scan"] { scan = scan.relative(to: ceiling) }
        results.append(scan)
        return results
    }
}
