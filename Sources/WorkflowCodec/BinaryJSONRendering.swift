import Foundation

extension BinaryPayloadCodec {
    /// The encoding in `bytes` as compact JSON text (map keys in order), for tools and logs that
    /// show payloads and states without knowing their types; `nil` when `bytes` are not a valid
    /// encoding. Integers, strings, arrays and maps map one to one; non-finite doubles become `null`.
    public static func jsonText(_ bytes: [UInt8]) -> String? {
        guard bytes.first == marker else { return nil }
        return bytes.withUnsafeBytes { buffer -> String? in
            let input = BinaryDecoding.Input(bytes: buffer)
            var out = ""
            guard let end = try? BinaryDecoding.writeJSON(input, at: 1, to: &out), end == buffer.count else { return nil }
            return out
        }
    }
}

extension BinaryDecoding {
    /// Appends the value at `offset` as JSON; returns the offset after it.
    static func writeJSON(_ input: Input, at offset: Int, to out: inout String) throws -> Int {
        switch try input.tag(at: offset, []) {
        case .null: out += "null"
        case .false: out += "false"
        case .true: out += "true"
        case .int: out += String(try input.integer(Int64.self, at: offset, []))
        case .uint: out += String(try input.integer(UInt64.self, at: offset, []))
        case .double:
            let value = try input.double(at: offset, [])
            out += value.isFinite ? "\(value)" : "null"
        case .string: appendJSONString(try input.string(at: offset, []), to: &out)
        case .array:
            var (count, position) = try input.varint(at: offset + 1, [])
            out += "["
            var first = true
            while count > 0 {
                if !first { out += "," }
                first = false
                position = try writeJSON(input, at: position, to: &out)
                count -= 1
            }
            out += "]"
            return position
        case .map:
            var (count, position) = try input.varint(at: offset + 1, [])
            out += "{"
            var first = true
            while count > 0 {
                if !first { out += "," }
                first = false
                let key = try input.stringRange(at: position, [])
                appendJSONString(String(decoding: UnsafeRawBufferPointer(rebasing: input.bytes[key]), as: UTF8.self), to: &out)
                out += ":"
                position = try writeJSON(input, at: key.upperBound, to: &out)
                count -= 1
            }
            out += "}"
            return position
        }
        return try input.skip(at: offset, [])
    }

    private static func appendJSONString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
