import DurableWorkflow
import Foundation
import Workflow
import WorkflowLMDB

/// A durable one-node counter (the benchmark's own, so the runner needs no test code), in two
/// forms that differ only in how their action is encoded.
protocol BenchCounter: Workflow, Codable, Sendable where State == Int, Output == Never, Rendering == (count: Int, sink: Sink<Add>) {
    associatedtype Add: BenchAddition where Add.WorkflowType == Self
    init()
}

/// The counter's action: adds `amount`.
protocol BenchAddition: DurableAction {
    init(amount: Int)
}

/// The counter whose action is encoded through `Codable`.
struct CodableCounter: BenchCounter {
    struct Add: BenchAddition {
        typealias WorkflowType = CodableCounter
        static let tag = "bench.add"
        var amount: Int
        func apply(toState state: inout Int) -> Never? {
            state += amount
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<CodableCounter>) -> (count: Int, sink: Sink<Add>) {
        (state, context.makeSink(of: Add.self))
    }
}

/// The counter whose action writes and reads its own bytes (the same bytes as `CodableCounter`'s).
struct OwnBytesCounter: BenchCounter {
    struct Add: BenchAddition, BinaryPayloadRepresentable {
        typealias WorkflowType = OwnBytesCounter
        static let tag = "bench.add"
        var amount: Int

        init(amount: Int) { self.amount = amount }

        func apply(toState state: inout Int) -> Never? {
            state += amount
            return nil
        }

        func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
            writer.writeMap(count: 1)
            writer.writeKey("amount"); writer.write(amount)
        }

        init(binaryPayload reader: inout BinaryPayloadReader) throws {
            try reader.readMap(count: 1)
            try reader.readKey("amount"); amount = try reader.read(Int.self)
        }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<OwnBytesCounter>) -> (count: Int, sink: Sink<Add>) {
        (state, context.makeSink(of: Add.self))
    }
}

func benchConfiguration<Counter: BenchCounter>(
    _ mode: DurableConfiguration.Mode, digests: DurableConfiguration.Digests = .every(1), snapshotEvery: Int? = nil,
    codec: (any PayloadCodec)? = nil, counter: Counter.Type = CodableCounter.self
) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: ActionRegistry(Counter.Add.self), codec: codec, snapshotEvery: snapshotEvery, digests: digests)
}

/// Durable actions per second in each mode, against the raw LMDB ceiling of the same policy.
enum DurableScenario {
    static let name = "durable"

    static func run(runs: Int, scale: Double, ceilings: [String: Measurement]) throws -> [Measurement] {
        var results: [Measurement] = []
        /// Measures a mode; with `paired`, also the raw ceiling for as many appends right before
        /// each run, and the median of the per-run ratios.
        func measure<Counter: BenchCounter>(
            _ caseName: String, _ mode: DurableConfiguration.Mode, digests: DurableConfiguration.Digests = .every(1),
            codec: (any PayloadCodec)? = nil, counter: Counter.Type = CodableCounter.self, sends: Int, ceiling: String,
            paired: RawAppends? = nil, detail: String
        ) throws {
            let dir = try temporaryStore("durable-\(caseName)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try WorkflowStore.open(path: dir)
            var instance = 0
            var ceilingSamples: [Double] = [], samples: [Double] = []
            let result = try Measurement.measure(name, caseName, metric: "actions_per_s", runs: runs, detail: detail) {
                if let paired { ceilingSamples.append(try paired.run(sends)) }
                instance += 1
                let host = try store.start(Counter(), id: "bench-\(instance)",
                                           configuration: benchConfiguration(mode, digests: digests, codec: codec, counter: counter))
                let sink = host.rendering.sink
                let elapsed = seconds {
                    for _ in 0..<sends { sink.send(.init(amount: 1)) }
                    let done = DispatchSemaphore(value: 0)
                    Task.detached { await host.flush(); done.signal() }
                    done.wait()
                }
                precondition(host.rendering.count == sends && host.failure == nil)
                host.stop()
                samples.append(Double(sends) / elapsed)
                return samples.last!
            }
            if paired != nil {
                let raw = Measurement(name, "\(caseName)-raw-ceiling", metric: "appends_per_s", samples: ceilingSamples,
                                      detail: "raw LMDB: \(sends) appends of \(RawLMDBScenario.recordSize) B in one transaction, before each \(caseName) run")
                results.append(raw)
                results.append(result.relative(to: raw, pairing: samples, with: ceilingSamples))
            } else {
                results.append(ceilings[ceiling].map { result.relative(to: $0) } ?? result)
            }
        }
        let small = max(30, Int(300 * scale)), large = Int(100_000 * scale)
        let paired = try RawAppends(label: "durable-ceiling")
        try measure("strict", .strict, sends: small, ceiling: "commit-strict",
                    detail: "1 entry per commit, 2 fsyncs; binary payload, digest per entry")
        try measure("grouped", .grouped, sends: large, ceiling: "append-1txn", paired: paired,
                    detail: "1 producer, commits of up to 1000 entries within 2 ms, synced")
        try measure("grouped-ownbytes", .grouped, counter: OwnBytesCounter.self, sends: large, ceiling: "append-1txn", paired: paired,
                    detail: "as grouped, the action writing its own binary payload (BinaryPayloadRepresentable)")
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
    static func build<Counter: BenchCounter>(
        _ store: WorkflowStore, id: String, entries: Int, snapshotEvery: Int?, codec: (any PayloadCodec)? = nil,
        counter: Counter.Type = CodableCounter.self
    ) throws {
        let host = try store.start(Counter(), id: id, configuration: benchConfiguration(
            .grouped, digests: .off, snapshotEvery: snapshotEvery, codec: codec, counter: counter))
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
        /// Builds instance `caseName` as a `Counter` and measures its full replay.
        func measureReplay<Counter: BenchCounter>(_ caseName: String, _ counter: Counter.Type, codec: (any PayloadCodec)?, detail: String) throws {
            try build(store, id: caseName, entries: replayEntries, snapshotEvery: nil, codec: codec, counter: counter)
            let configuration = benchConfiguration(.grouped, digests: .off, counter: counter)
            var replay = try Measurement.measure(name, caseName, metric: "entries_per_s", runs: runs, detail: detail) {
                let elapsed = try seconds { _ = try store.state(of: caseName, as: Counter.self, configuration: configuration) }
                return Double(replayEntries) / elapsed
            }
            if let scan = ceilings["scan"] { replay = replay.relative(to: scan) }
            results.append(replay)
        }
        try measureReplay("replay-1node", CodableCounter.self, codec: nil,
                          detail: "full replay of \(replayEntries) entries (decode, apply, render), no digests")
        try measureReplay("replay-1node-ownbytes", OwnBytesCounter.self, codec: nil,
                          detail: "as replay-1node, the action reading its own binary payload (BinaryPayloadRepresentable)")
        try measureReplay("replay-1node-json", CodableCounter.self, codec: JSONPayloadCodec(),
                          detail: "as replay-1node, entries written with the JSON codec")

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
                        let host = try store.resume(id: id, as: CodableCounter.self, configuration: configuration)
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
                try store.start(CodableCounter(), id: "idle-\(index)", configuration: configuration).stop()
            }
            let sends = Int(20_000 * scale)
            var run = 0
            var result = try Measurement.measure(name, "\(total)-instances", metric: "actions_per_s", runs: runs,
                                                 detail: "appends to 1 live instance in a store of \(total); processCrashSafe") {
                run += 1
                let host = try store.start(CodableCounter(), id: "live-\(run)", configuration: configuration)
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
