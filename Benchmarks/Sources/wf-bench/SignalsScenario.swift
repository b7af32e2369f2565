import DurableWorkflow
import Foundation
import Histogram
import LMDB
import WorkflowLMDB
import WorkflowSignals

/// Nanoseconds of the system-wide monotonic clock: comparable across processes on one host.
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Post-to-delivery latency in one process and across two, and batched posts per second.
enum SignalsScenario {
    static let name = "signals"

    /// The hidden poster mode: `wf-bench --signal-poster STORE SIGNAL COUNT PAUSE_MICROS`.
    static func runPoster(_ arguments: [String]) throws {
        let center = try SignalCenter.open(path: arguments[0], processIdentity: "bench-poster",
                                           configuration: .init(durability: .processCrashSafe))
        let signal = SignalID(arguments[1])!
        let count = Int(arguments[2])!, pause = UInt32(arguments[3])!
        for _ in 0..<count {
            try center.post(signal, value: monotonicNanoseconds(), terminatesConsumersAfterDelivery: false)
            usleep(pause)
        }
        try center.stop()
    }

    /// Percentile measurements (in µs) from one histogram per run.
    static func percentiles(_ caseName: String, runs: [Histogram<UInt64>], detail: String) -> [Measurement] {
        Measurement.percentiles(name, caseName, runs: runs, detail: detail)
    }

    /// One process posts `pings` times, each after the previous delivery (and `pause` µs more);
    /// returns the post-to-handler latencies.
    static func pingPong(pings: Int, pause: UInt32, onPostingThread: Bool = false) throws -> Histogram<UInt64> {
        let dir = try temporaryStore("signals-local")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let center = try SignalCenter.open(path: dir, processIdentity: "bench", configuration: .init(
            durability: .processCrashSafe, deliverOnPostingThread: onPostingThread))
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "bench")
        let delivered = DispatchSemaphore(value: 0)
        let latencies = LatencyLog()
        center.attach(consumer, handler: .atMostOnce { delivery in
            latencies.record(monotonicNanoseconds() - ((try? delivery.decode(UInt64.self)) ?? 0))
            delivered.signal()
        })
        for _ in 0..<pings {
            if pause > 0 { usleep(pause) }
            try center.post(signal, value: monotonicNanoseconds(), terminatesConsumersAfterDelivery: false)
            delivered.wait()
        }
        try center.stop()
        return latencies.histogram
    }

    /// The raw LMDB floor of a local delivery: what a post and its delivery mark cost without the
    /// engine (a commit of a version, a read transaction, a commit of a mark, no fsync), with
    /// `pause` µs before each, as in ``pingPong(pings:pause:onPostingThread:)``.
    static func rawTwoCommits(pings: Int, pause: UInt32) throws -> Histogram<UInt64> {
        let dir = try temporaryStore("signals-raw")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let env = try Environment.open(path: dir, configuration: .init(durability: .noSync))
        let versions: Database<UInt64, [UInt8]> = try env.database(named: "versions")
        let marks: Database<UInt64, UInt64> = try env.database(named: "marks")
        let latencies = LatencyLog()
        for ping in 0..<UInt64(pings) {
            if pause > 0 { usleep(pause) }
            let start = monotonicNanoseconds()
            try env.write { txn in try txn.put(Array(repeating: 1, count: 40), forKey: ping, in: versions) }
            let payload = try env.read { txn in try txn.get(ping, in: versions) }
            try env.write { txn in try txn.put(UInt64(payload?.count ?? 0), forKey: 1, in: marks) }
            latencies.record(monotonicNanoseconds() - start)
        }
        return latencies.histogram
    }

    /// `measurements` with each percentile's ratio to the same percentile of `ceiling`.
    static func relative(_ measurements: [Measurement], to ceiling: [Measurement]) -> [Measurement] {
        zip(measurements, ceiling).map { $0.relative(to: $1) }
    }

    static func run(runs: Int, scale: Double) throws -> [Measurement] {
        var results: [Measurement] = []
        let pings = max(200, Int(3_000 * scale))

        // In one process: post, wait for the handler, post the next (no queueing). Back to back,
        // the dispatcher is still watching (SignalConfiguration.spinAfterDelivery) when the next
        // post commits; with a pause of 2 ms between pings it is asleep and a post must wake it.
        results += percentiles("in-process", runs: try (0..<runs).map { _ in try pingPong(pings: pings, pause: 0) },
                               detail: "post to at-most-once handler, same process, no fsync, \(pings) pings back to back")
        results += percentiles("in-process-posting-thread", runs: try (0..<runs).map { _ in
            try pingPong(pings: pings, pause: 0, onPostingThread: true)
        }, detail: "as in-process, with deliverOnPostingThread (the dispatcher stays asleep; each post delivers itself)")
        let idlePings = max(100, pings / 3)
        // After 2 ms of idleness this machine runs even a raw commit several times slower than
        // back to back: the idle cases are compared with raw LMDB doing the same two commits.
        let rawIdle = percentiles("raw-idle-two-commits", runs: try (0..<runs).map { _ in try rawTwoCommits(pings: idlePings, pause: 2000) },
                                  detail: "ceiling: raw LMDB commit + read + commit (no fsync), 2 ms apart, no engine")
        results += rawIdle
        results += relative(percentiles("in-process-idle", runs: try (0..<runs).map { _ in try pingPong(pings: idlePings, pause: 2000) },
                                        detail: "as in-process, 2 ms between pings: the dispatcher sleeps and is woken by each post"), to: rawIdle)
        results += relative(percentiles("in-process-idle-posting-thread", runs: try (0..<runs).map { _ in
            try pingPong(pings: idlePings, pause: 2000, onPostingThread: true)
        }, detail: "as in-process-idle, with deliverOnPostingThread: a post that finds the dispatcher asleep delivers itself"), to: rawIdle)

        // Across processes: this process consumes, a child (this binary) posts every millisecond.
        var remote: [Histogram<UInt64>] = []
        let posts = max(200, Int(2_000 * scale))
        for _ in 0..<runs {
            let dir = try temporaryStore("signals-remote")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let center = try SignalCenter.open(path: dir, processIdentity: "bench-consumer", configuration: .init(durability: .processCrashSafe))
            let signal = SignalID()
            let consumer = try center.register(signal, owner: "bench", scope: .durable)
            let latencies = LatencyLog()
            center.attach(consumer, handler: .atMostOnce { delivery in
                latencies.record(monotonicNanoseconds() - ((try? delivery.decode(UInt64.self)) ?? 0))
            })
            let poster = Process()
            poster.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            poster.arguments = ["--signal-poster", dir, signal.description, "\(posts)", "1000"]
            try poster.run()
            poster.waitUntilExit()
            let deadline = ContinuousClock.now + .seconds(10)
            while latencies.count < posts && ContinuousClock.now < deadline { usleep(1000) }
            remote.append(latencies.histogram)
            try center.stop()
        }
        results += percentiles("cross-process", runs: remote, detail: "another process posts every 1 ms; wake-up by datagram socket; no fsync")

        // Batched posts per second.
        let batch = 1000, batches = max(10, Int(200 * scale))
        let dir = try temporaryStore("signals-posts")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let center = try SignalCenter.open(path: dir, processIdentity: "bench", configuration: .init(durability: .processCrashSafe))
        let signals = (0..<100).map { _ in SignalID() }
        results.append(try Measurement.measure(name, "posts-batched", metric: "posts_per_s", runs: runs,
                                               detail: "\(batch) posts per transaction over 100 signals, no fsync") {
            let elapsed = try seconds {
                for round in 0..<batches {
                    try center.post((0..<batch).map { SignalPost(signal: signals[($0 + round) % signals.count], payload: [1, 2, 3, 4],
                                                                 terminatesConsumersAfterDelivery: false) })
                }
            }
            return Double(batch * batches) / elapsed
        })
        results.append(try Measurement.measure(name, "posts-single-strict", metric: "posts_per_s", runs: runs,
                                               detail: "1 post per transaction, strict (2 fsyncs)") {
            let strictDir = try temporaryStore("signals-strict")
            defer { try? FileManager.default.removeItem(atPath: strictDir) }
            let strict = try SignalCenter.open(path: strictDir, processIdentity: "bench-strict")
            let count = max(20, Int(200 * scale))
            let elapsed = try seconds { for _ in 0..<count { try strict.post(signals[0], payload: [1], terminatesConsumersAfterDelivery: false) } }
            try strict.stop()
            return Double(count) / elapsed
        })
        try center.stop()
        return results
    }
}

/// Latencies recorded from the dispatcher thread.
final class LatencyLog: @unchecked Sendable {
    // @unchecked Sendable: every access goes through `lock`.
    private let lock = NSLock()
    private var values = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    private var recorded = 0

    func record(_ nanoseconds: UInt64) {
        lock.withLock {
            _ = values.record(nanoseconds)
            recorded += 1
        }
    }

    var count: Int { lock.withLock { recorded } }
    var histogram: Histogram<UInt64> { lock.withLock { values } }
}
