import DurableWorkflow
import Foundation
import Workflow

/// A durable one-node counter (the benchmark's own copy, so the runner needs no test code).
struct BenchCounter: Workflow, Codable, Sendable {
    struct Add: DurableAction {
        typealias WorkflowType = BenchCounter
        static let tag = "bench.add"
        var amount: Int
        func apply(toState state: inout Int) -> Never? {
            state += amount
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<BenchCounter>) -> (count: Int, sink: Sink<Add>) {
        (state, context.makeSink(of: Add.self))
    }
}

func benchConfiguration(
    _ mode: DurableConfiguration.Mode, digests: DurableConfiguration.Digests = .every(1), snapshotEvery: Int? = nil,
    codec: (any PayloadCodec)? = nil
) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: ActionRegistry(BenchCounter.Add.self), codec: codec, snapshotEvery: snapshotEvery, digests: digests)
}

/// Durable actions per second in each mode, against the raw LMDB ceiling of the same policy.
enum DurableScenario {
    static let name = "durable"

    static func run(runs: Int, scale: Double, ceilings: [String: Measurement]) throws -> [Measurement] {
        var results: [Measurement] = []
        /// Measures a mode; with `paired`, also the raw ceiling for as many appends right before
        /// each run, and the ratio of the two medians.
        func measure(_ caseName: String, _ mode: DurableConfiguration.Mode, digests: DurableConfiguration.Digests = .every(1),
                     codec: (any PayloadCodec)? = nil, sends: Int, ceiling: String, paired: RawAppends? = nil, detail: String) throws {
            let dir = try temporaryStore("durable-\(caseName)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try WorkflowStore.open(path: dir)
            var instance = 0
            var ceilingSamples: [Double] = []
            let result = try Measurement.measure(name, caseName, metric: "actions_per_s", runs: runs, detail: detail) {
                if let paired { ceilingSamples.append(try paired.run(sends)) }
                instance += 1
                let host = try store.start(BenchCounter(), id: "bench-\(instance)", configuration: benchConfiguration(mode, digests: digests, codec: codec))
                let sink = host.rendering.sink
                let elapsed = seconds {
                    for _ in 0..<sends { sink.send(.init(amount: 1)) }
                    let done = DispatchSemaphore(value: 0)
                    Task.detached { await host.flush(); done.signal() }
                    done.wait()
                }
                precondition(host.rendering.count == sends && host.failure == nil)
                host.stop()
                return Double(sends) / elapsed
            }
            if paired != nil {
                let raw = Measurement(name, "\(caseName)-raw-ceiling", metric: "appends_per_s", samples: ceilingSamples,
                                      detail: "raw LMDB: \(sends) appends of \(RawLMDBScenario.recordSize) B in one transaction, before each \(caseName) run")
                results.append(raw)
                results.append(result.relative(to: raw))
            } else {
                results.append(ceilings[ceiling].map { result.relative(to: $0) } ?? result)
            }
        }
        let small = max(30, Int(300 * scale)), large = Int(30_000 * scale)
        let paired = try RawAppends(label: "durable-ceiling")
        try measure("strict", .strict, sends: small, ceiling: "commit-strict",
                    detail: "1 entry per commit, 2 fsyncs; binary payload, digest per entry")
        try measure("grouped", .grouped, sends: large, ceiling: "append-1txn", paired: paired,
                    detail: "1 producer, commits of up to 1000 entries within 2 ms, synced")
        try measure("grouped-json", .grouped, codec: JSONPayloadCodec(), sends: large, ceiling: "append-1txn",
                    detail: "as grouped, with the JSON codec")
        try measure("grouped-nodigest", .grouped, digests: .off, sends: large, ceiling: "append-1txn",
                    detail: "as grouped, without state digests")
        try measure("processCrashSafe", .processCrashSafe, sends: large, ceiling: "commit-nosync",
                    detail: "1 entry per commit, no fsync (background sync every 1 s)")
        return results
    }
}

/// Replay speed and resume time against log length, with and without snapshots.
enum ReplayScenario {
    static let name = "replay"

    /// Builds instance `id` with `entries` actions (grouped, so building is quick).
    static func build(_ store: WorkflowStore, id: String, entries: Int, snapshotEvery: Int?, codec: (any PayloadCodec)? = nil) throws {
        let host = try store.start(BenchCounter(), id: id, configuration: benchConfiguration(
            .grouped, digests: .off, snapshotEvery: snapshotEvery, codec: codec))
        let sink = host.rendering.sink
        for _ in 0..<entries { sink.send(.init(amount: 1)) }
        let done = DispatchSemaphore(value: 0)
        Task.detached { await host.stopAndWait(); done.signal() }
        done.wait()
    }

    static func run(runs: Int, scale: Double, ceilings: [String: Measurement]) throws -> [Measurement] {
        let dir = try temporaryStore("replay")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try WorkflowStore.open(path: dir)
        var results: [Measurement] = []
        let replayEntries = Int(100_000 * scale)
        let configuration = benchConfiguration(.grouped, digests: .off)
        for (caseName, codec, detail) in [
            ("replay-1node", nil, "full replay of \(replayEntries) entries (decode, apply, render), no digests"),
            ("replay-1node-json", JSONPayloadCodec() as (any PayloadCodec)?, "as replay-1node, entries written with the JSON codec"),
        ] {
            try build(store, id: caseName, entries: replayEntries, snapshotEvery: nil, codec: codec)
            var replay = try Measurement.measure(name, caseName, metric: "entries_per_s", runs: runs, detail: detail) {
                let elapsed = try seconds { _ = try store.state(of: caseName, as: BenchCounter.self, configuration: configuration) }
                return Double(replayEntries) / elapsed
            }
            if let scan = ceilings["scan"] { replay = replay.relative(to: scan) }
            results.append(replay)
        }

        for exponent in [4, 5, 6] {
            let count = Int(pow(10, Double(exponent)) * scale)
            for snapshots in [false, true] {
                // With snapshots, the worst case: the log ends just before the next snapshot, so
                // 9,999 entries follow the latest one.
                let entries = snapshots ? count - 2 : count  // sequence 1 is the props entry
                let id = "resume-\(exponent)-\(snapshots)"
                try build(store, id: id, entries: entries, snapshotEvery: snapshots ? 10_000 : nil)
                results.append(try Measurement.measure(
                    name, "resume-\(count)\(snapshots ? "-snap10k" : "")", metric: "resume_ms", runs: runs,
                    detail: snapshots ? "\(entries) entries, snapshot every 10,000 (9,999-entry tail): resume + first rendering"
                        : "\(entries) entries, no snapshot: resume + first rendering") {
                    let elapsed = try seconds {
                        let host = try store.resume(id: id, as: BenchCounter.self, configuration: configuration)
                        precondition(host.rendering.count == entries)
                        host.stop()
                    }
                    return elapsed * 1000
                })
            }
        }
        return results
    }
}

/// Append speed as the number of instances in the store grows.
enum InstancesScenario {
    static let name = "instances"

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        var results: [Measurement] = []
        var base: Measurement?
        for total in [1, 1_000, Int(100_000 * scale)] {
            let dir = try temporaryStore("instances")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try WorkflowStore.open(path: dir)
            let configuration = benchConfiguration(.processCrashSafe, digests: .off)
            for index in 1..<total {
                try store.start(BenchCounter(), id: "idle-\(index)", configuration: configuration).stop()
            }
            let sends = Int(20_000 * scale)
            var run = 0
            var result = try Measurement.measure(name, "\(total)-instances", metric: "actions_per_s", runs: runs,
                                                 detail: "appends to 1 live instance in a store of \(total); processCrashSafe") {
                run += 1
                let host = try store.start(BenchCounter(), id: "live-\(run)", configuration: configuration)
                let sink = host.rendering.sink
                let elapsed = seconds { for _ in 0..<sends { sink.send(.init(amount: 1)) } }
                host.stop()
                return Double(sends) / elapsed
            }
            if let base { result = result.relative(to: base) } else { base = result }
            results.append(result)
        }
        return results
    }
}
