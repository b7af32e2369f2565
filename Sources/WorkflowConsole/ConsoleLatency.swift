import CoreMetrics
import Foundation
import WorkflowLocks

/// The engine's latencies for a console that runs inside the service: a swift-metrics factory
/// that keeps what the engine's timers record (a commit round's write, a signal's delivery, a
/// resume's replay) as histograms, one per second for the last ten minutes, and gives their
/// percentiles. `wfctl serve` runs in a process of its own, where the engine's timers do not
/// record anything: there the console says so.
///
/// Give it to the store (`WorkflowStore(backend:metricsFactory:)`) or bootstrap it with the
/// process's other backends (`MetricsSystem.bootstrap(MultiplexMetricsHandler(factories:
/// [latency, prometheus]))`), and to the console (`WorkflowConsole(store:latency:)`). Every
/// metric but those timers gets a handler that records nothing.
///
/// The histograms are log-linear: 16 buckets for each doubling from 1 µs to about 2 minutes, so a
/// percentile is exact to within 4.4% (its bucket's upper bound is given).
public final class ConsoleLatency: MetricsFactory, Sendable {
    /// The timers kept, with what the console calls them.
    static let kept: [(label: String, name: String)] = [
        ("workflow_commit_duration", "commit round (a write of the pipeline, request to outcome)"),
        ("workflow_signal_latency", "signal delivery (post to hand-over)"),
        ("workflow_replay_duration", "resume (replay)"),
    ]

    /// Ten minutes of one-second histograms.
    static let seconds = 600
    static let bucketsPerDoubling = 16
    static let doublings = 27

    /// One timer's histograms, one per second, in a ring.
    struct Series {
        /// The second (since 1970) each slot holds, or 0.
        var secondOf: [Int]
        var counts: [[UInt32]]

        init() {
            secondOf = Array(repeating: 0, count: ConsoleLatency.seconds)
            counts = Array(repeating: [], count: ConsoleLatency.seconds)
        }
    }

    private let series = Lock<[String: Series]>([:])
    /// The clock, in seconds since 1970 (tests move it).
    private let now: @Sendable () -> Double

    public convenience init() {
        self.init(clock: { Date().timeIntervalSince1970 })
    }

    package init(clock: @escaping @Sendable () -> Double) {
        now = clock
        series.withLock { series in
            for (label, _) in Self.kept { series[label] = Series() }
        }
    }

    /// Records `nanoseconds` for the timer `label`, in the histogram of this second.
    func record(_ label: String, nanoseconds: Int64) {
        let second = Int(now())
        let bucket = Self.bucket(of: nanoseconds)
        series.withLock { series in
            guard var one = series[label] else { return }
            series[label] = nil
            let slot = second % Self.seconds
            if one.secondOf[slot] != second {
                one.secondOf[slot] = second
                one.counts[slot] = Array(repeating: 0, count: Self.bucketsPerDoubling * Self.doublings)
            }
            one.counts[slot][bucket] &+= 1
            series[label] = one
        }
    }

    /// The bucket of a duration: 16 per doubling above 1 µs (all below 1 µs in the first).
    static func bucket(of nanoseconds: Int64) -> Int {
        let micros = Double(max(nanoseconds, 1)) / 1_000
        guard micros > 1 else { return 0 }
        let index = Int((log2(micros) * Double(bucketsPerDoubling)).rounded(.down)) + 1
        return min(index, bucketsPerDoubling * doublings - 1)
    }

    /// The upper bound of bucket `index`, in µs.
    static func upperBound(of index: Int) -> Double {
        pow(2, Double(index) / Double(bucketsPerDoubling))
    }

    /// One timer's figures over a span of seconds.
    public struct Percentiles: Codable, Sendable, Equatable {
        /// The timer's label (`workflow_commit_duration`) and what it measures.
        public let label: String
        public let name: String
        /// How many durations were recorded in the span.
        public let count: Int
        /// The 50th, 90th, 99th percentiles and the largest, in µs (each its bucket's upper
        /// bound); `nil` without any duration.
        public let p50: Double?
        public let p90: Double?
        public let p99: Double?
        public let max: Double?
    }

    /// Each kept timer's percentiles over the last `seconds` seconds (this second included).
    public func percentiles(overLast seconds: Int) -> [Percentiles] {
        let second = Int(now())
        let span = Swift.max(1, Swift.min(seconds, Self.seconds))
        let kept = series.withLock { $0 }
        return Self.kept.map { label, name in
            var merged = Array(repeating: UInt64(0), count: Self.bucketsPerDoubling * Self.doublings)
            if let one = kept[label] {
                for slot in 0..<Self.seconds where one.secondOf[slot] > second - span && one.secondOf[slot] <= second {
                    for (index, count) in one.counts[slot].enumerated() where count > 0 { merged[index] += UInt64(count) }
                }
            }
            let total = merged.reduce(0, +)
            func percentile(_ fraction: Double) -> Double? {
                guard total > 0 else { return nil }
                let rank = UInt64((Double(total) * fraction).rounded(.up))
                var seen: UInt64 = 0
                for (index, count) in merged.enumerated() {
                    seen += count
                    if seen >= Swift.max(rank, 1) { return Self.upperBound(of: index) }
                }
                return nil
            }
            return Percentiles(label: label, name: name, count: Int(total), p50: percentile(0.5), p90: percentile(0.9),
                               p99: percentile(0.99), max: percentile(1))
        }
    }

    // MARK: MetricsFactory

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard Self.kept.contains(where: { $0.label == label }) else { return Discarded() }
        return Kept(label: label, latency: self)
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Discarded() }
    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { Discarded() }
    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { Discarded() }
    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Discarded() }
    public func destroyCounter(_ handler: any CounterHandler) {}
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    public func destroyRecorder(_ handler: any RecorderHandler) {}
    public func destroyMeter(_ handler: any MeterHandler) {}
    public func destroyTimer(_ handler: any TimerHandler) {}

    /// A kept timer's handler.
    private final class Kept: TimerHandler, Sendable {
        let label: String
        let latency: ConsoleLatency
        init(label: String, latency: ConsoleLatency) {
            self.label = label
            self.latency = latency
        }
        func recordNanoseconds(_ duration: Int64) { latency.record(label, nanoseconds: duration) }
    }

    /// The handler of every other metric: it records nothing.
    private final class Discarded: CounterHandler, FloatingPointCounterHandler, RecorderHandler, MeterHandler, TimerHandler, Sendable {
        func increment(by: Int64) {}
        func reset() {}
        func increment(by: Double) {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func increment(by: Int) {}
        func decrement(by: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
    }
}
