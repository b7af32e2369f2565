import Foundation
import LMDB

/// The ceiling: the same records and commit policies straight through the LMDB layer.
enum RawLMDBScenario {
    static let name = "raw-lmdb"
    static let recordSize = 100

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        let value = [UInt8](repeating: 0xAB, count: recordSize)
        var results: [Measurement] = []

        func appendCase(_ caseName: String, durability: EnvironmentConfiguration.Durability, perCommit: Int, commits: Int, detail: String) throws {
            results.append(try appends(name, caseName, durability: durability, perCommit: perCommit, commits: commits, runs: runs, detail: detail))
        }

        let big = Int(200_000 * scale)
        try appendCase("append-1txn", durability: .noSync, perCommit: big, commits: 1,
                       detail: "\(big) appends of \(recordSize) B in one transaction")
        try appendCase("commit-strict", durability: .strict, perCommit: 1, commits: max(20, Int(200 * scale)),
                       detail: "1 append per commit, 2 fsyncs each")
        try appendCase("batch100-strict", durability: .strict, perCommit: 100, commits: max(5, Int(50 * scale)),
                       detail: "100 appends per commit, 2 fsyncs each")
        try appendCase("commit-nometasync", durability: .noMetaSync, perCommit: 1, commits: max(20, Int(200 * scale)),
                       detail: "1 append per commit, 1 fsync each")
        try appendCase("commit-nosync", durability: .noSync, perCommit: 1, commits: Int(20_000 * scale),
                       detail: "1 append per commit, no fsync")

        // Scan: a full ordered read of a log.
        let dir = try temporaryStore("scan")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let env = try Environment.open(path: dir, configuration: .init(durability: .noSync))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "log")
        let entries = Int(1_000_000 * scale)
        try env.write { txn in
            for key in 1...UInt64(entries) { try txn.append(value, forKey: key, in: db) }
        }
        results.append(try Measurement.measure(name, "scan", metric: "entries_per_s", runs: runs,
                                               detail: "forward cursor over \(entries) entries of \(recordSize) B") {
            var seen = 0
            let elapsed = try seconds {
                try env.read { txn in
                    try txn.forEach(in: db) { _, value in
                        seen &+= value.count
                        return true
                    }
                }
            }
            precondition(seen == entries * recordSize)
            return Double(entries) / elapsed
        })
        return results
    }
}

extension RawLMDBScenario {
    /// Appends per second through the LMDB layer in a store of its own: `commits` commits of
    /// `perCommit` records each, with `durability`, median of `runs`.
    static func appends(
        _ scenario: String, _ caseName: String, durability: EnvironmentConfiguration.Durability, perCommit: Int, commits: Int,
        runs: Int, detail: String
    ) throws -> Measurement {
        let raw = try RawCommits(label: caseName, durability: durability, perCommit: perCommit, commits: commits)
        return try Measurement.measure(scenario, caseName, metric: "appends_per_s", runs: runs, detail: detail) { try raw.run() }
    }
}

/// Raw appends of ``RawLMDBScenario/recordSize``-byte records in one transaction, into a store of
/// its own: the ceiling a scenario measures between its own runs, so that both sides of a ratio
/// see the machine at the same moment (this VM's speed drifts by up to 2x within minutes).
final class RawAppends {
    private let directory: String
    private let environment: Environment
    private let database: Database<UInt64, [UInt8]>
    private let value = [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize)
    private var next: UInt64 = 1

    init(label: String) throws {
        directory = try temporaryStore(label)
        environment = try Environment.open(path: directory, configuration: .init(durability: .noSync))
        database = try environment.database(named: "log")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Appends `count` records in one transaction; returns appends per second.
    func run(_ count: Int) throws -> Double {
        let elapsed = try seconds {
            try environment.write { txn in
                for _ in 0..<count {
                    try txn.append(value, forKey: next, in: database)
                    next += 1
                }
            }
        }
        return Double(count) / elapsed
    }
}

/// Raw commits of a fixed number of ``RawLMDBScenario/recordSize``-byte appends each, into a store
/// of its own that stays open between runs, so that a ceiling can be measured right before each
/// run of the engine it is compared with, and the disk's drift weighs on both sides of a ratio.
final class RawCommits {
    private let directory: String
    private let environment: Environment
    private let database: Database<UInt64, [UInt8]>
    private let value = [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize)
    private let perCommit: Int
    private let commits: Int
    private var next: UInt64 = 1

    /// Runs of `commits` commits of `perCommit` appends, each with `durability`.
    init(label: String, durability: EnvironmentConfiguration.Durability, perCommit: Int, commits: Int) throws {
        directory = try temporaryStore(label)
        environment = try Environment.open(path: directory, configuration: .init(durability: durability))
        database = try environment.database(named: "log")
        self.perCommit = perCommit
        self.commits = commits
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// One run; returns appends per second.
    func run() throws -> Double {
        let elapsed = try seconds {
            for _ in 0..<commits {
                try environment.write { txn in
                    for _ in 0..<perCommit {
                        try txn.append(value, forKey: next, in: database)
                        next += 1
                    }
                }
            }
        }
        return Double(perCommit * commits) / elapsed
    }
}

/// A fresh directory for one benchmark store.
func temporaryStore(_ label: String) throws -> String {
    let path = NSTemporaryDirectory() + "/wf-bench-\(label)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
