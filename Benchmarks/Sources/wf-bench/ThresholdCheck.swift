import Foundation

/// A thresholds file: the ratios a run must keep (each measured against its ceiling in the same
/// run, higher is better), with a tolerance for a shared, noisy machine.
struct Thresholds: Decodable {
    /// What the file is for.
    let about: String?
    /// How far below its ratio a case may fall before it counts as a regression (0.4: down to
    /// 60% of it), unless the threshold sets its own.
    let tolerance: Double
    let thresholds: [Threshold]

    struct Threshold: Decodable {
        let scenario: String
        let `case`: String
        /// The ratio this case usually reaches.
        let ratio: Double
        let tolerance: Double?
        /// Why the floor matters (the guarantee or user-facing shape it protects).
        let reason: String?
    }

    /// Reads and checks `path`; a file that cannot be used is an error saying what and where.
    static func load(_ path: String) throws -> Thresholds {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CheckFailure("cannot read the thresholds file \(path): \(error.localizedDescription)")
        }
        let thresholds: Thresholds
        do {
            thresholds = try JSONDecoder().decode(Thresholds.self, from: data)
        } catch {
            throw CheckFailure("the thresholds file \(path) is not valid: \(error)")
        }
        guard !thresholds.thresholds.isEmpty else { throw CheckFailure("the thresholds file \(path) names no threshold") }
        guard (0..<1).contains(thresholds.tolerance) else {
            throw CheckFailure("the thresholds file \(path) needs a tolerance from 0 up to 1 (0.4: a ratio may fall to 60% of its usual value)")
        }
        for threshold in thresholds.thresholds {
            let tolerance = threshold.tolerance ?? thresholds.tolerance
            guard threshold.ratio > 0, (0..<1).contains(tolerance) else {
                throw CheckFailure("\(path): \(threshold.scenario)/\(threshold.case) needs a ratio above 0 and a tolerance from 0 up to 1")
            }
        }
        return thresholds
    }

    /// The scenarios the file names, in the order they first appear.
    var scenarios: [String] {
        var seen: [String] = []
        for threshold in thresholds where !seen.contains(threshold.scenario) { seen.append(threshold.scenario) }
        return seen
    }
}

struct CheckFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Compares a run's ratios with a thresholds file.
enum ThresholdCheck {
    enum Verdict: String {
        case passed = "ok"
        case regressed = "REGRESSED"
        /// The scenario ran but did not report the case, or reported it without a ratio.
        case missing = "MISSING"
        /// The scenario was not run (not selected, or it failed: its failure is printed above).
        case notRun = "not run"
    }

    struct Row {
        let threshold: Thresholds.Threshold
        let floor: Double
        let measured: Double?
        let verdict: Verdict
    }

    static func check(_ thresholds: Thresholds, against results: [Measurement], ran: Set<String>) -> [Row] {
        thresholds.thresholds.map { threshold in
            let floor = threshold.ratio * (1 - (threshold.tolerance ?? thresholds.tolerance))
            guard ran.contains(threshold.scenario) else { return Row(threshold: threshold, floor: floor, measured: nil, verdict: .notRun) }
            guard let measured = results.first(where: { $0.scenario == threshold.scenario && $0.case == threshold.case })?.ratio else {
                return Row(threshold: threshold, floor: floor, measured: nil, verdict: .missing)
            }
            return Row(threshold: threshold, floor: floor, measured: measured, verdict: measured >= floor ? .passed : .regressed)
        }
    }

    /// Whether the check passes: nothing regressed or missing.
    static func passes(_ rows: [Row]) -> Bool {
        !rows.contains { $0.verdict == .regressed || $0.verdict == .missing }
    }

    static func report(_ rows: [Row], file: String) -> String {
        let header = ["scenario/case", "usual", "floor", "measured", "verdict"]
        let cells = rows.map { row in
            ["\(row.threshold.scenario)/\(row.threshold.case)", String(format: "%.2f×", row.threshold.ratio),
             String(format: "%.2f×", row.floor), row.measured.map { String(format: "%.2f×", $0) } ?? "-", row.verdict.rawValue]
        }
        let widths = header.indices.map { column in ([header[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == 0 || index == 4 ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var text = "== check against \(file)\n" + line(header) + "\n"
        text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for row in cells { text += line(row) + "\n" }
        let regressed = rows.filter { $0.verdict == .regressed || $0.verdict == .missing }
        text += regressed.isEmpty ? "every checked ratio is at or above its floor\n"
            : "\(regressed.count) of \(rows.count) below the floor or missing: " + regressed.map { row in
                "\(row.threshold.scenario)/\(row.threshold.case)" + (row.threshold.reason.map { " (\($0))" } ?? "")
            }.joined(separator: "; ") + "\n"
        return text
    }
}
