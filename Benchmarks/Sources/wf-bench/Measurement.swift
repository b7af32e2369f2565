import Foundation
import Histogram

/// One measured figure: the median of several runs, with its spread and an optional ratio to a
/// ceiling or peer measured in the same run.
struct Measurement: Codable {
    let scenario: String
    let `case`: String
    let metric: String
    let median: Double
    let min: Double
    let max: Double
    let runs: Int
    var ratio: Double?
    var ratioTo: String?
    let detail: String

    enum CodingKeys: String, CodingKey {
        case scenario, `case`, metric, median, min, max, runs, ratio, detail
        case ratioTo = "ratio_to"
    }

    /// Runs `body` `runs` times; each run returns one sample in the metric's unit.
    static func measure(
        _ scenario: String, _ name: String, metric: String, runs: Int, detail: String, _ body: () throws -> Double
    ) rethrows -> Measurement {
        var samples: [Double] = []
        for _ in 0..<runs { samples.append(try body()) }
        return Measurement(scenario, name, metric: metric, samples: samples, detail: detail)
    }

    /// This figure divided by `ceiling` (same metric), recorded with the ceiling's name.
    func relative(to ceiling: Measurement) -> Measurement {
        var copy = self
        let higherIsBetter = metric.hasSuffix("_per_s")
        copy.ratio = higherIsBetter ? median / ceiling.median : ceiling.median / median
        copy.ratioTo = "\(ceiling.scenario)/\(ceiling.case)"
        return copy
    }

    /// Relative to a ceiling measured right before each run: the ratio is the median of the
    /// per-run ratios (`samples[i] / ceilingSamples[i]`, both higher-is-better), so a stretch in
    /// which a shared machine runs slow weighs on both sides of a pair instead of on one median.
    func relative(to ceiling: Measurement, pairing samples: [Double], with ceilingSamples: [Double]) -> Measurement {
        precondition(samples.count == ceilingSamples.count && !samples.isEmpty, "paired samples differ in number")
        var copy = relative(to: ceiling)
        copy.ratio = Measurement.median(of: zip(samples, ceilingSamples).map { $0 / $1 })
        return copy
    }

    /// The middle value of `values` (the mean of the two middle ones for an even count).
    static func median(of values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2]
            : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

extension Measurement {
    /// The 50th, 99th and 99.9th percentiles (in µs) of nanosecond latencies, one histogram per
    /// run: each the median over the runs, named `caseName-p50` and so on in `scenario`.
    static func percentiles(_ scenario: String, _ caseName: String, runs: [Histogram<UInt64>], detail: String) -> [Measurement] {
        [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")].map { percentile, label in
            let samples = runs.map { Double($0.valueAtPercentile(percentile)) / 1000 }.sorted()
            return Measurement(scenario: scenario, case: "\(caseName)-\(label)", metric: "latency_us",
                               median: samples[samples.count / 2], min: samples.first!, max: samples.last!,
                               runs: samples.count, ratio: nil, ratioTo: nil, detail: detail)
        }
    }

    /// The median and spread of `samples` (at least one).
    init(_ scenario: String, _ name: String, metric: String, samples: [Double], detail: String) {
        let sorted = samples.sorted()
        self.init(scenario: scenario, case: name, metric: metric, median: Measurement.median(of: samples),
                  min: sorted.first!, max: sorted.last!, runs: sorted.count, ratio: nil, ratioTo: nil, detail: detail)
    }
}

/// Seconds elapsed while running `body`.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// A scenario whose run did not do what it measures.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
