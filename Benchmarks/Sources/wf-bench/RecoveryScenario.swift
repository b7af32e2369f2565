import DurableWorkflow
import Foundation
import LMDB
import Synchronization
import Workflow
import WorkflowLMDB

/// A service's restart: `resumeAll` of 10,000 instances, each with a snapshot and a log tail to
/// replay after it, in a store reopened for the purpose; against the raw ceiling of the same
/// shape (per instance: one read transaction for its record, snapshot and tail, then one
/// unsynced write of its record, as a claim is written). Twice: instances whose entries were
/// committed an instance at a time (in its range of the log), and instances whose clients all
/// awaited their actions at once, as a busy service's do (their entries in the store-wide
/// journal when the service stopped).
enum RecoveryScenario {
    static let name = "recovery"
    static let entries = 16
    static let snapshotAt = 10

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        let total = max(10, Int(10_000 * scale))
        let raw = try RawRecovery(instances: total)
        let rawDetail = "raw LMDB: per instance a read of its record, snapshot and \(entries - snapshotAt) entries, an unsynced write"
        let dir = try temporaryStore("recovery")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try fill(WorkflowStore.open(path: dir), instances: total)
        let alone = try pairedResumeAll(
            name, "resume-all", detail: "resumeAll of \(total) instances (\(entries) entries each, a snapshot at \(snapshotAt)) in a reopened LMDB store",
            raw: ("raw-resume-all", rawDetail),
            total: total, runs: runs, ceiling: { try raw.run() }, store: { try WorkflowStore.open(path: dir) })
        // Each run resumes a copy of the store as the clients left it: a resume checkpoints the
        // journal, so the next run would find it empty.
        let journaledDir = try temporaryStore("recovery-journaled")
        var copies: [String] = []
        defer { for path in [journaledDir] + copies { try? FileManager.default.removeItem(atPath: path) } }
        try fillAwaiting(WorkflowStore.open(path: journaledDir), instances: total)
        let journaled = try pairedResumeAll(
            name, "resume-all-journaled",
            detail: "the same, the instances' clients having awaited their actions all at once (their entries in the store-wide journal)",
            raw: ("raw-resume-all-journaled", rawDetail),
            total: total, runs: runs, ceiling: { try raw.run() },
            store: {
                let copy = try temporaryStore("recovery-journaled-run")
                copies.append(copy)
                try FileManager.default.removeItem(atPath: copy)
                try FileManager.default.copyItem(atPath: journaledDir, toPath: copy)
                return try WorkflowStore.open(path: copy)
            })
        return alone + journaled
    }

    /// The configuration of the recovered instances.
    static let configuration = benchConfiguration(.processCrashSafe, snapshotEvery: snapshotAt)

    /// Starts `total` counters in `store`, each with `entries` entries, and stops them (released).
    static func fill(_ store: WorkflowStore, instances total: Int) throws {
        var hosts: [WorkflowHost<CodableCounter>] = []
        for index in 0..<total {
            let host = try store.start(CodableCounter(), id: "i\(index)", configuration: configuration)
            for _ in 1..<entries { host.rendering.sink.send(.init(amount: 1)) }
            hosts.append(host)
        }
        stopAll(hosts)
        try store.sync()
    }

    /// Starts `total` counters in `grouped` mode and has a client per instance await each of its
    /// actions, all clients at once (commits of many instances: their entries go to the
    /// store-wide journal), then stops them (released).
    static func fillAwaiting(_ store: WorkflowStore, instances total: Int) throws {
        let grouped = benchConfiguration(.grouped, snapshotEvery: snapshotAt)
        let hosts = try (0..<total).map { index in
            try store.start(CodableCounter(), id: "i\(index)", configuration: grouped)
        }
        let sinks = hosts.map { $0.rendering.sink }
        let done = DispatchSemaphore(value: 0)
        let refused = Mutex(0)
        Task.detached {
            let count = await withTaskGroup(of: Int.self) { group in
                for sink in sinks {
                    group.addTask {
                        var refused = 0
                        for _ in 1..<entries where !(await sink.sendAndWait(.init(amount: 1))) { refused += 1 }
                        return refused
                    }
                }
                return await group.reduce(0, +)
            }
            refused.withLock { $0 = count }
            done.signal()
        }
        done.wait()
        let count = refused.withLock { $0 }
        guard count == 0 else { throw BenchFailure("\(count) actions were not acknowledged") }
        stopAll(hosts)
        try store.sync()
    }

    /// Stops `hosts` and returns once every one has stopped (its instance released), so that a
    /// measurement after it does not share the machine or the store with their releases.
    static func stopAll(_ hosts: [WorkflowHost<CodableCounter>]) {
        let stopped = DispatchGroup()
        for host in hosts {
            stopped.enter()
            host.whenStopped { stopped.leave() }
            host.stop()
        }
        stopped.wait()
    }

    /// Measures `resumeAll` of the `total` instances in `store()` (each run stops what it resumed),
    /// each run paired with `ceiling()` measured right before it, so both see the machine at the
    /// same moment: the ceiling's measurement, then the engine's relative to it.
    static func pairedResumeAll(
        _ scenario: String, _ label: String, detail: String, raw: (label: String, detail: String), total: Int, runs: Int,
        ceiling: () throws -> Double, store: () throws -> WorkflowStore
    ) throws -> [Measurement] {
        var ceilings: [Double] = [], engine: [Double] = []
        let result = try Measurement.measure(scenario, label, metric: "instances_per_s", runs: runs, detail: detail) {
            ceilings.append(try ceiling())
            let store = try store()
            var resumed: [WorkflowHost<CodableCounter>] = []
            let elapsed = try seconds {
                resumed = try store.resumeAll(CodableCounter.self, configuration: configuration).compactMap(\.host)
            }
            guard resumed.count == total else { throw BenchFailure("resumed \(resumed.count) of \(total) instances") }
            stopAll(resumed)
            engine.append(Double(total) / elapsed)
            return engine.last!
        }
        let rawResult = Measurement(scenario, raw.label, metric: "instances_per_s", samples: ceilings, detail: raw.detail)
        return [rawResult, result.relative(to: rawResult, pairing: engine, with: ceilings)]
    }
}

/// The raw shape of a recovery, in a store of its own.
private final class RawRecovery {
    private let directory: String
    private let environment: Environment
    private let records: Database<UInt64, [UInt8]>
    private let log: Database<UInt64, [UInt8]>
    private let snapshots: Database<UInt64, [UInt8]>
    private let instances: Int

    init(instances: Int) throws {
        self.instances = instances
        directory = try temporaryStore("recovery-raw")
        environment = try Environment.open(path: directory, configuration: .init(durability: .strict))
        records = try environment.database(named: "records")
        log = try environment.database(named: "log")
        snapshots = try environment.database(named: "snapshots")
        let record = [UInt8](repeating: 1, count: 48), entry = [UInt8](repeating: 2, count: 60), snapshot = [UInt8](repeating: 3, count: 160)
        try environment.write { txn in
            for instance in 0..<UInt64(instances) {
                try txn.put(record, forKey: instance, in: records)
                for sequence in 1...UInt64(RecoveryScenario.entries) { try txn.put(entry, forKey: instance << 8 | sequence, in: log) }
                try txn.put(snapshot, forKey: instance << 8 | UInt64(RecoveryScenario.snapshotAt), in: snapshots)
            }
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Instances "recovered" per second.
    func run() throws -> Double {
        let claimed = [UInt8](repeating: 4, count: 48)
        var bytes = 0
        let elapsed = try seconds {
            for instance in 0..<UInt64(instances) {
                try environment.read { txn in
                    bytes &+= try txn.value(forKey: instance, in: records) { $0.count } ?? 0
                    bytes &+= try txn.value(forKey: instance << 8 | UInt64(RecoveryScenario.snapshotAt), in: snapshots) { $0.count } ?? 0
                    for sequence in UInt64(RecoveryScenario.snapshotAt + 1)...UInt64(RecoveryScenario.entries) {
                        bytes &+= try txn.value(forKey: instance << 8 | sequence, in: log) { $0.count } ?? 0
                    }
                }
                try environment.write(durability: .noSync) { txn in try txn.put(claimed, forKey: instance, in: records) }
            }
        }
        precondition(bytes > 0)
        return Double(instances) / elapsed
    }
}
