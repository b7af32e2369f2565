import Foundation
import WorkflowLocks

/// An encoded value of ``BinaryPayloadCodec`` or ``JSONPayloadCodec`` as a tree, for editing a
/// stored form without its Swift type: a state's field added, renamed or removed between two
/// versions of the type. Written back, it gives the codec's own bytes: the binary encoding
/// exactly as the encoder writes the same value (map entries in key order); JSON as read, with
/// only the edited parts written anew, in the order `JSONEncoder`'s sorted keys give.
package indirect enum StoredValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    /// A double's bit pattern.
    case double(UInt64)
    case string(String)
    case array([StoredValue])
    case map([Entry])
    /// JSON text kept as it was read: a number or a string literal (quotes and escapes included).
    case literal(String)

    /// One entry of a map: its key and, for JSON read from text, the key's literal.
    package struct Entry: Equatable, Sendable {
        package var key: String
        package var literal: String?
        package var value: StoredValue

        package init(key: String, literal: String? = nil, value: StoredValue) {
            self.key = key
            self.literal = literal
            self.value = value
        }
    }

    /// Which codec's bytes a tree came from.
    package enum Form: Sendable {
        case binary
        case json
    }

    /// Why bytes are not a stored form this reads.
    package struct Unreadable: Error, CustomStringConvertible {
        package let description: String
    }

    /// The tree of `bytes` and the form they are in (binary when they start with the marker).
    package static func read(_ bytes: [UInt8]) throws(Unreadable) -> (StoredValue, Form) {
        if bytes.first == BinaryPayloadCodec.marker { return (try readBinary(bytes), .binary) }
        return (try readJSON(bytes), .json)
    }

    /// The bytes of this tree in `form`.
    package func bytes(_ form: Form) -> [UInt8] {
        switch form {
        case .binary:
            var out: [UInt8] = [BinaryPayloadCodec.marker]
            writeBinary(to: &out)
            return out
        case .json:
            var out = ""
            writeJSON(to: &out)
            return Array(out.utf8)
        }
    }

    // MARK: Edits

    /// Removes the entry at `path` (map keys from the top); whether there was one.
    @discardableResult
    package mutating func remove(at path: ArraySlice<String>) -> Bool {
        guard let first = path.first, case .map(var entries) = self else { return false }
        guard let index = entries.firstIndex(where: { $0.key == first }) else { return false }
        if path.count == 1 {
            entries.remove(at: index)
            self = .map(entries)
            return true
        }
        let removed = entries[index].value.remove(at: path.dropFirst())
        self = .map(entries)
        return removed
    }

    /// Gives the entry at `path` the key `newKey` (in the order of `form`); whether there was one.
    @discardableResult
    package mutating func rename(at path: ArraySlice<String>, to newKey: String, form: Form) -> Bool {
        guard let first = path.first, case .map(var entries) = self else { return false }
        guard let index = entries.firstIndex(where: { $0.key == first }) else { return false }
        if path.count == 1 {
            let value = entries.remove(at: index).value
            entries.removeAll { $0.key == newKey }
            Self.insert(Entry(key: newKey, value: value), into: &entries, form: form)
        } else {
            guard entries[index].value.rename(at: path.dropFirst(), to: newKey, form: form) else { return false }
        }
        self = .map(entries)
        return true
    }

    /// Adds `value` at `path` unless an entry is there already; whether it was added (`false`
    /// also when a map on the way is missing).
    @discardableResult
    package mutating func insert(_ value: StoredValue, at path: ArraySlice<String>, form: Form) -> Bool {
        guard let first = path.first, case .map(var entries) = self else { return false }
        if path.count == 1 {
            guard !entries.contains(where: { $0.key == first }) else { return false }
            Self.insert(Entry(key: first, value: value), into: &entries, form: form)
            self = .map(entries)
            return true
        }
        guard let index = entries.firstIndex(where: { $0.key == first }) else { return false }
        let added = entries[index].value.insert(value, at: path.dropFirst(), form: form)
        self = .map(entries)
        return added
    }

    /// The keys of the top-level map (none for another value).
    package var keys: [String] {
        guard case .map(let entries) = self else { return [] }
        return entries.map(\.key)
    }

    private static func insert(_ entry: Entry, into entries: inout [Entry], form: Form) {
        let index: Int
        switch form {
        case .binary: index = entries.firstIndex { entry.key < $0.key } ?? entries.count
        case .json: index = entries.firstIndex { JSONKeyOrder.precedes(entry.key, $0.key) } ?? entries.count
        }
        entries.insert(entry, at: index)
    }

    // MARK: Binary

    private static func readBinary(_ bytes: [UInt8]) throws(Unreadable) -> StoredValue {
        do {
            return try bytes.withUnsafeBytes { buffer in
                let input = BinaryDecoding.Input(bytes: buffer)
                let (value, end) = try readBinary(input, at: 1)
                guard end == buffer.count else { throw Unreadable(description: "bytes follow the value (offset \(end))") }
                return value
            }
        } catch let error as Unreadable {
            throw error
        } catch {
            throw Unreadable(description: "\(error)")
        }
    }

    private static func readBinary(_ input: BinaryDecoding.Input, at offset: Int) throws -> (StoredValue, Int) {
        switch try input.tag(at: offset, []) {
        case .null: return (.null, offset + 1)
        case .false: return (.bool(false), offset + 1)
        case .true: return (.bool(true), offset + 1)
        case .int: return (.int(try input.integer(Int64.self, at: offset, [])), try input.skip(at: offset, []))
        case .uint: return (.uint(try input.integer(UInt64.self, at: offset, [])), try input.skip(at: offset, []))
        case .double: return (.double(try input.double(at: offset, []).bitPattern), offset + 9)
        case .string: return (.string(try input.string(at: offset, [])), try input.skip(at: offset, []))
        case .array:
            var (count, position) = try input.varint(at: offset + 1, [])
            guard count <= UInt64(input.bytes.count) else { throw Unreadable(description: "an array claims \(count) elements") }
            var elements: [StoredValue] = []
            while count > 0 {
                let (element, next) = try readBinary(input, at: position)
                elements.append(element)
                position = next
                count -= 1
            }
            return (.array(elements), position)
        case .map:
            var (count, position) = try input.varint(at: offset + 1, [])
            guard count <= UInt64(input.bytes.count) else { throw Unreadable(description: "a map claims \(count) entries") }
            var entries: [Entry] = []
            while count > 0 {
                let key = try input.stringRange(at: position, [])
                let (value, next) = try readBinary(input, at: key.upperBound)
                entries.append(Entry(key: String(decoding: UnsafeRawBufferPointer(rebasing: input.bytes[key]), as: UTF8.self), value: value))
                position = next
                count -= 1
            }
            return (.map(entries), position)
        }
    }

    private func writeBinary(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(BinaryTag.null.rawValue)
        case .bool(let value): out.append(value ? BinaryTag.true.rawValue : BinaryTag.false.rawValue)
        case .int(let value):
            out.append(BinaryTag.int.rawValue)
            BinaryEncoding.writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &out)
        case .uint(let value):
            out.append(BinaryTag.uint.rawValue)
            BinaryEncoding.writeVarint(value, to: &out)
        case .double(let pattern):
            out.append(BinaryTag.double.rawValue)
            withUnsafeBytes(of: pattern.littleEndian) { out.append(contentsOf: $0) }
        case .string(let value):
            out.append(BinaryTag.string.rawValue)
            BinaryEncoding.writeString(value, to: &out)
        case .literal(let text):
            // A JSON literal in a binary tree: a string of its text (never made by reading).
            out.append(BinaryTag.string.rawValue)
            BinaryEncoding.writeString(text, to: &out)
        case .array(let elements):
            out.append(BinaryTag.array.rawValue)
            BinaryEncoding.writeVarint(UInt64(elements.count), to: &out)
            for element in elements { element.writeBinary(to: &out) }
        case .map(let entries):
            out.append(BinaryTag.map.rawValue)
            BinaryEncoding.writeVarint(UInt64(entries.count), to: &out)
            for entry in entries.sorted(by: { $0.key < $1.key }) {
                BinaryEncoding.writeString(entry.key, to: &out)
                entry.value.writeBinary(to: &out)
            }
        }
    }

    // MARK: JSON

    private static func readJSON(_ bytes: [UInt8]) throws(Unreadable) -> StoredValue {
        var reader = JSONReader(bytes: bytes)
        let value = try reader.value()
        reader.skipSpace()
        guard reader.position == bytes.count else { throw Unreadable(description: "text follows the JSON value (offset \(reader.position))") }
        return value
    }

    private func writeJSON(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .uint(let value): out += String(value)
        case .double(let pattern):
            let value = Double(bitPattern: pattern)
            out += value.isFinite ? (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)") : "null"
        case .string(let value): out += JSONKeyOrder.literal(value)
        case .literal(let text): out += text
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                element.writeJSON(to: &out)
            }
            out += "]"
        case .map(let entries):
            out += "{"
            for (index, entry) in entries.enumerated() {
                if index > 0 { out += "," }
                out += entry.literal ?? JSONKeyOrder.literal(entry.key)
                out += ":"
                entry.value.writeJSON(to: &out)
            }
            out += "}"
        }
    }
}

/// Reads JSON text into a ``StoredValue``, keeping numbers and strings as their literals.
private struct JSONReader {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ what: String) -> StoredValue.Unreadable {
        StoredValue.Unreadable(description: "\(what) at offset \(position) of the JSON text")
    }

    mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func value() throws(StoredValue.Unreadable) -> StoredValue {
        skipSpace()
        guard position < bytes.count else { throw fail("the text ends early") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var entries: [StoredValue.Entry] = []
            skipSpace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .map(entries)
            }
            while true {
                skipSpace()
                let (key, literal) = try string()
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                position += 1
                entries.append(.init(key: key, literal: literal, value: try value()))
                skipSpace()
                guard position < bytes.count else { throw fail("the text ends early") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                position += 1
                return .map(entries)
            }
        case UInt8(ascii: "["):
            position += 1
            var elements: [StoredValue] = []
            skipSpace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                elements.append(try value())
                skipSpace()
                guard position < bytes.count else { throw fail("the text ends early") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                position += 1
                return .array(elements)
            }
        case UInt8(ascii: "\""):
            return .literal(try string().literal)
        case UInt8(ascii: "t"): return try word("true", .bool(true))
        case UInt8(ascii: "f"): return try word("false", .bool(false))
        case UInt8(ascii: "n"): return try word("null", .null)
        default:
            let start = position
            while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
            guard position > start else { throw fail("unexpected character") }
            return .literal(String(decoding: bytes[start..<position], as: UTF8.self))
        }
    }

    mutating func word(_ text: String, _ value: StoredValue) throws(StoredValue.Unreadable) -> StoredValue {
        let utf8 = Array(text.utf8)
        guard position + utf8.count <= bytes.count, Array(bytes[position..<position + utf8.count]) == utf8 else { throw fail("unexpected word") }
        position += utf8.count
        return value
    }

    /// A string literal: its value and its text.
    mutating func string() throws(StoredValue.Unreadable) -> (value: String, literal: String) {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw fail("expected a string") }
        let start = position
        position += 1
        while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
            position += bytes[position] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard position < bytes.count else { throw fail("a string runs past the end") }
        position += 1
        let literal = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = try? JSONDecoder().decode(String.self, from: Data(literal.utf8)) else { throw fail("an unreadable string") }
        return (value, literal)
    }
}

/// How `JSONEncoder` with sorted keys orders and writes keys, learned from the encoder itself.
private enum JSONKeyOrder {
    private static let known = Lock<[String: Bool]>([:])

    /// Whether `JSONEncoder` with sorted keys writes `a` before `b`.
    static func precedes(_ a: String, _ b: String) -> Bool {
        if a == b { return false }
        let pair = a + "\u{0}" + b
        if let found = known.withLock({ $0[pair] }) { return found }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = (try? encoder.encode([a: 0, b: 0])).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let first = text.range(of: literal(a)).map(\.lowerBound) ?? text.endIndex
        let second = text.range(of: literal(b)).map(\.lowerBound) ?? text.endIndex
        let result = first < second
        known.withLock { $0[pair] = result }
        return result
    }

    /// `text` as `JSONEncoder` writes a string.
    static func literal(_ text: String) -> String {
        (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\(text)\""
    }
}
