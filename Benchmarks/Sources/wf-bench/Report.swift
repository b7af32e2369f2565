import Foundation

/// Prints measurements as aligned tables, one per scenario.
enum Report {
    static func table(_ scenario: String, _ measurements: [Measurement]) -> String {
        let header = ["case", "metric", "median", "min", "max", "runs", "ratio", "detail"]
        let rows = measurements.map { m in
            [m.case, m.metric, format(m.median), format(m.min), format(m.max), "\(m.runs)",
             m.ratio.map { String(format: "%.2f× %@", $0, m.ratioTo ?? "") } ?? "", m.detail]
        }
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == 0 || index == 1 || index >= 6 ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var text = "== \(scenario)\n" + line(header) + "\n"
        text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for row in rows { text += line(row) + "\n" }
        return text
    }

    static func format(_ value: Double) -> String {
        switch value {
        case 1_000_000...: return String(format: "%.2fM", value / 1_000_000)
        case 10_000...: return String(format: "%.1fk", value / 1_000)
        case 100...: return String(format: "%.0f", value)
        case 1...: return String(format: "%.2f", value)
        default: return String(format: "%.3f", value)
        }
    }

    /// What the machine is, for the JSON file and the table header.
    static func machine() -> [String: String] {
        var info: [String: String] = [:]
        info["cores"] = "\(ProcessInfo.processInfo.activeProcessorCount)"
        info["memory_gib"] = String(format: "%.0f", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824)
        info["os"] = ProcessInfo.processInfo.operatingSystemVersionString
        info["date"] = ISO8601DateFormatter().string(from: Date())
        if let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) {
            let temp = NSTemporaryDirectory()
            var best: [Substring] = []
            for line in mounts.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count > 2, temp.hasPrefix(String(fields[1])) else { continue }
                if best.isEmpty || fields[1].count > best[1].count { best = fields }
            }
            if !best.isEmpty { info["filesystem"] = "\(best[2]) on \(best[0]) (\(best[1]))" }
        }
        #if swift(>=6.3)
        info["swift"] = "6.3+"
        #else
        info["swift"] = "6.x"
        #endif
        return info
    }
}
