import DurableWorkflow
import Foundation
import Workflow

/// Aligned text tables (no colour: the output is often not a terminal).
struct Table {
    let headers: [String]
    var rows: [[String]] = []

    init(_ headers: String...) { self.headers = headers }

    mutating func add(_ cells: String...) { rows.append(cells) }

    var text: String {
        let widths = headers.indices.map { column in ([headers[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0 }
        func line(_ cells: [String]) -> String {
            var text = cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
            while text.last == " " { text.removeLast() }
            return text
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}

/// Writes to standard output, unbuffered per line (so `log --follow` shows entries at once).
package func emit(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// JSON text for `value` (sorted keys, one line unless `pretty`).
package func json<T: Encodable>(_ value: T, pretty: Bool = true) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

/// A JSON value decoded from bytes, for embedding decoded payloads and states in JSON output.
package indirect enum JSONValue: Codable, Equatable, Sendable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    /// The value in `bytes` (JSON, or the binary codec's encoding), or `nil` when they are neither.
    package static func parse(_ bytes: [UInt8]) -> JSONValue? {
        if let text = BinaryPayloadCodec.jsonText(bytes) { return try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }
        return try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Bytes as readable text: compact JSON when they are JSON, otherwise a safe hex preview.
func readable(_ bytes: [UInt8], limit: Int = 120) -> String {
    if let value = JSONValue.parse(bytes), let text = try? json(value, pretty: false) {
        return text.count > limit ? String(text.prefix(limit)) + "…" : text
    }
    let hex = bytes.prefix(32).map { String(format: "%02x", $0) }.joined()
    return "<\(bytes.count) bytes: \(hex)\(bytes.count > 32 ? "…" : "")>"
}

/// A time as ISO 8601 with milliseconds, UTC.
package func iso(_ time: WallTime) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: Date(timeIntervalSince1970: Double(time.nanosecondsSinceEpoch) / 1e9))
}

/// The type name without its module, for tables.
func short(_ typeName: String) -> String {
    typeName.split(separator: ".").last.map(String.init) ?? typeName
}

/// A byte count as B, KB, MB or GB.
func size(_ bytes: Int) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(bytes), unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
