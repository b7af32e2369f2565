import DurableWorkflow
import Foundation
import Histogram
import LMDB
import Synchronization
import Workflow
import WorkflowLMDB

/// A service's shapes: N instances in one store, each driven by its own client task, against the
/// raw ceiling of N appends per synced commit and against the same shape with no engine
/// (``RawGroupCommitter``), both paired with the engine run by run.
///
/// - request/response: each client loops `await sendAndWait` for a fixed window (`grouped`,
///   `strict`); the figure is actions acknowledged per second over all clients; in `grouped`, the
///   process's CPU per acknowledged action and per record of the shape too (``CPUClock``): with
///   the rate, how many of the cores each kept busy;
/// - fire and forget: each client sends its share of a fixed total, then awaits `flush()`;
/// - two processes: two children of this runner on one store, N/2 instances each, request/response
///   in `grouped` for the same window.
enum ServiceScenario {
    static let name = "service"
    static let instanceCounts = [1, 10, 100, 1_000]

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        let window = max(0.25, 1.0 * scale)
        let total = max(10_000, Int(100_000 * scale))
        var results: [Measurement] = []

        var grouped: [Int: PairedRuns] = [:], latencies: [Int: [Measurement]] = [:]
        for count in instanceCounts {
            (grouped[count], latencies[count]) = try groupedAgainstShape(instances: count, window: window, runs: runs)
        }
        results += instanceCounts.compactMap { grouped[$0]?.ceiling }
        for count in instanceCounts where count > 1 {
            results.append(try rawScatteredCommits(instances: count, commits: commitsOf(count), runs: runs))
        }
        var groupedByCount: [Int: Measurement] = [:]
        for count in instanceCounts {
            guard let runs = grouped[count] else { continue }
            groupedByCount[count] = runs.engine
            results += [runs.shape, runs.engine, runs.paired] + (latencies[count] ?? []) + runs.cpu
        }
        var strictOne: Measurement?
        for count in instanceCounts {
            var result = try requestResponse(.strict, instances: count, window: window, runs: runs)
            if let strictOne { result = result.relative(to: strictOne) } else { strictOne = result }
            results.append(result)
        }
        var fireOne: Measurement?
        for count in instanceCounts {
            var result = try fireAndForget(instances: count, total: total, runs: runs)
            if let fireOne { result = result.relative(to: fireOne) } else { fireOne = result }
            results.append(result)
        }
        for count in instanceCounts where count >= 10 {
            var result = try twoProcesses(instances: count, window: window, runs: runs)
            if let oneProcess = groupedByCount[count] { result = result.relative(to: oneProcess) }
            results.append(result)
        }
        return results
    }

    // MARK: The ceiling

    /// How many commits a run of a raw ceiling of `count` records per commit makes.
    static func commitsOf(_ count: Int) -> Int { max(5, min(200, 20_000 / count)) }

    /// Raw LMDB again, each commit appending one record to each of `instances` key ranges (an
    /// instance's key, then its sequence, as the engine's log is keyed), each range already
    /// holding 100 records: what one entry per instance per commit costs in pages written.
    static func rawScatteredCommits(instances: Int, commits: Int, runs: Int) throws -> Measurement {
        let dir = try temporaryStore("service-scattered-\(instances)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let environment = try Environment.open(path: dir, configuration: .init(durability: .strict))
        let log: Database<[UInt8], [UInt8]> = try environment.database(named: "log")
        let value = [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize)
        /// The instance's, then the sequence's 8 bytes, most significant first.
        func key(_ instance: Int, _ sequence: Int) -> [UInt8] {
            [UInt64(instance), UInt64(sequence)].flatMap { value in (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
        }
        try environment.write { txn in
            for instance in 0..<instances {
                for sequence in 1...100 { try txn.put(value, forKey: key(instance, sequence), in: log) }
            }
        }
        var next = 101
        return try Measurement.measure(
            name, "raw-\(instances)-instances-per-commit", metric: "appends_per_s", runs: runs,
            detail: "raw LMDB: \(commits) synced commits of 1 append to each of \(instances) instances' key ranges"
        ) {
            let elapsed = try seconds {
                for _ in 0..<commits {
                    try environment.write { txn in
                        for instance in 0..<instances { try txn.put(value, forKey: key(instance, next), in: log) }
                    }
                    next += 1
                }
            }
            return Double(instances * commits) / elapsed
        }
    }

    // MARK: One process

    /// `instances` counters started in a fresh store, their sinks, and the store.
    static func startInstances(
        _ mode: DurableConfiguration.Mode, count: Int, label: String, in path: String? = nil, prefix: String = "i"
    ) throws -> (store: WorkflowStore, hosts: [WorkflowHost<CodableCounter>], directory: String) {
        let dir = try path ?? temporaryStore("service-\(label)")
        let store = try WorkflowStore.open(path: dir)
        let configuration = benchConfiguration(mode)
        let hosts = try (0..<count).map { index in
            try store.start(CodableCounter(), id: "\(prefix)\(index)", configuration: configuration)
        }
        return (store, hosts, dir)
    }

    /// Each instance's client loops `sendAndWait` until `window` seconds are up; returns the
    /// actions acknowledged per second.
    static func acknowledgedPerSecond(_ hosts: [WorkflowHost<CodableCounter>], window: Double) -> Double {
        acknowledged(hosts, window: window).perSecond
    }

    /// As ``acknowledgedPerSecond(_:window:)``, with the latency of each acknowledged action (from
    /// its `sendAndWait` to its return, in nanoseconds).
    static func acknowledged(_ hosts: [WorkflowHost<CodableCounter>], window: Double) -> ClientLoad {
        let sinks = hosts.map { $0.rendering.sink }
        return clientsLooping(sinks.count, window: window) { client in await sinks[client].sendAndWait(.init(amount: 1)) }
    }

    /// `count` client tasks, each looping `request` (given its client's index; it says whether the
    /// request was acknowledged) until `window` seconds are up; returns acknowledged requests per
    /// second over all of them, and each acknowledged request's latency.
    static func clientsLooping(_ count: Int, window: Double, _ request: @escaping @Sendable (Int) async -> Bool) -> ClientLoad {
        let deadline = ContinuousClock.now + .milliseconds(Int(window * 1_000))
        let done = DispatchSemaphore(value: 0)
        let acknowledged = AcknowledgedCount()
        let start = ContinuousClock.now
        Task.detached {
            await withTaskGroup(of: [UInt64].self) { group in
                for client in 0..<count {
                    group.addTask {
                        var latencies: [UInt64] = []
                        while true {
                            let sent = ContinuousClock.now
                            guard sent < deadline else { break }
                            if await request(client) { latencies.append(nanoseconds(ContinuousClock.now - sent)) }
                        }
                        return latencies
                    }
                }
                for await latencies in group { acknowledged.add(latencies) }
            }
            done.signal()
        }
        done.wait()
        let elapsed = ContinuousClock.now - start
        let (count, latencies) = acknowledged.value  // after the clock: the histogram takes a while
        return ClientLoad(perSecond: Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18),
                          latencies: latencies)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
    }

    /// Request/response in `grouped` with `count` instances, each run paired with the ceiling (raw
    /// LMDB: synced commits of `count` appends, ``RawCommits``) and the same shape on raw
    /// LMDB (``RawGroupCommitter``), both measured right before it: the ceiling's figure, the
    /// shape's, the engine's against the ceiling, and the engine's against the shape (each the
    /// median of the runs' ratios); and the percentiles of the engine's latency per action (from
    /// `sendAndWait` to its return), each the median of the runs'.
    static func groupedAgainstShape(instances count: Int, window: Double, runs: Int) throws -> (PairedRuns, [Measurement]) {
        let (store, hosts, dir) = try startInstances(.grouped, count: count, label: "rr-grouped-\(count)")
        defer {
            for host in hosts { host.stop() }
            _ = store
            try? FileManager.default.removeItem(atPath: dir)
        }
        let commits = commitsOf(count)
        let ceiling = try RawCommits(label: "service-raw-\(count)", durability: .strict, perCommit: count, commits: commits)
        let shape = try RawLMDBRequestResponse(clients: count)
        var latencies: [Histogram<UInt64>] = []
        let paired = try shape.committer.pairedWithEngine(
            name, clients: count, window: window, runs: runs, shapeMetric: "appends_per_s",
            shapeDetail: "raw LMDB: \(count) clients each looping await one record's synced group commit for \(window) s",
            engineDetail: "\(count) instances, a client each looping await sendAndWait for \(window) s",
            ceiling: ("raw-\(count)-per-commit",
                      "raw LMDB: \(commits) synced commits of \(count) appends of \(RawLMDBScenario.recordSize) B, right before each run of the shape and the engine",
                      { try ceiling.run() })
        ) {
            let load = acknowledged(hosts, window: window)
            latencies.append(load.latencies)
            return load.perSecond
        }
        return (paired, Measurement.percentiles(
            name, "request-response-grouped-\(count)-latency", runs: latencies,
            detail: "\(count) instances: one sendAndWait, from the call to its return (acknowledged: committed and synced)"))
    }

    static func requestResponse(_ mode: DurableConfiguration.Mode, instances count: Int, window: Double, runs: Int) throws -> Measurement {
        let modeName = if case .strict = mode { "strict" } else { "grouped" }
        let (store, hosts, dir) = try startInstances(mode, count: count, label: "rr-\(modeName)-\(count)")
        defer {
            for host in hosts { host.stop() }
            _ = store
            try? FileManager.default.removeItem(atPath: dir)
        }
        return Measurement.measure(
            name, "request-response-\(modeName)-\(count)", metric: "actions_per_s", runs: runs,
            detail: "\(count) instances, a client each looping await sendAndWait for \(window) s"
        ) {
            acknowledgedPerSecond(hosts, window: window)
        }
    }

    static func fireAndForget(instances count: Int, total: Int, runs: Int) throws -> Measurement {
        let (store, hosts, dir) = try startInstances(.grouped, count: count, label: "ff-\(count)")
        defer {
            for host in hosts { host.stop() }
            _ = store
            try? FileManager.default.removeItem(atPath: dir)
        }
        let share = total / count
        return Measurement.measure(
            name, "fire-and-forget-\(count)", metric: "actions_per_s", runs: runs,
            detail: "\(count) instances in grouped mode, a client each sending \(share) then awaiting flush()"
        ) {
            let done = DispatchSemaphore(value: 0)
            let start = ContinuousClock.now
            Task.detached {
                await withTaskGroup(of: Void.self) { group in
                    for host in hosts {
                        group.addTask {
                            let sink = host.rendering.sink
                            for _ in 0..<share { sink.send(.init(amount: 1)) }
                            await host.flush()
                        }
                    }
                }
                done.signal()
            }
            done.wait()
            let elapsed = ContinuousClock.now - start
            return Double(share * count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }

    // MARK: Two processes

    static func twoProcesses(instances count: Int, window: Double, runs: Int) throws -> Measurement {
        let dir = try temporaryStore("service-two-\(count)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var run = 0
        return try Measurement.measure(
            name, "two-processes-grouped-\(count)", metric: "actions_per_s", runs: runs,
            detail: "2 processes on one store, \(count / 2) instances and clients each, await sendAndWait for \(window) s"
        ) {
            run += 1
            return try ChildProcesses.runTogether((0..<2).map { child in
                ["--service-child", dir, "r\(run)p\(child)-", "\(count / 2)", "\(window)"]
            })
        }
    }

    /// The child side of ``twoProcesses(instances:window:runs:)``.
    static func runChild(_ arguments: [String]) throws {
        let dir = arguments[0], prefix = arguments[1], count = Int(arguments[2])!, window = Double(arguments[3])!
        let (store, hosts, _) = try startInstances(.grouped, count: count, label: "", in: dir, prefix: prefix)
        ChildProcesses.serve { acknowledgedPerSecond(hosts, window: window) }
        for host in hosts { host.stop() }
        _ = store
    }
}

/// What client tasks looping on requests got done: acknowledged requests per second, and the
/// latency of each.
struct ClientLoad {
    let perSecond: Double
    let latencies: Histogram<UInt64>
}

/// The acknowledged requests' latencies, added to from the client tasks' group, read once they
/// are done (and the clock stopped: the histogram is made then).
final class AcknowledgedCount: Sendable {
    private let clients = Mutex<[[UInt64]]>([])

    /// Adds one client's acknowledged requests, by their latencies in nanoseconds.
    func add(_ latencies: [UInt64]) {
        clients.withLock { $0.append(latencies) }
    }

    var value: (count: Int, latencies: Histogram<UInt64>) {
        clients.withLock { clients in
            var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
            for latencies in clients {
                for latency in latencies { _ = histogram.record(latency) }
            }
            return (clients.reduce(0) { $0 + $1.count }, histogram)
        }
    }
}
