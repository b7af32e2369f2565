#if Postgres
import Foundation

/// A script of SQL statements, as the schema's files hold them, cut into the statements the
/// server takes one at a time: at each `;` that is not inside a quoted string ('…'), a quoted
/// identifier ("…"), a dollar-quoted body ($$…$$, $tag$…$tag$) or a comment (`--` to the end
/// of the line, `/* … */`, nested). A piece with nothing but comments and blanks is no statement.
struct SQLScript {
    /// The statements, in order, each without its `;`.
    let statements: [String]

    init(_ text: String) {
        let bytes = Array(text.utf8)
        var statements: [String] = []
        var start = 0, index = 0, meaningful = false
        func cut(at end: Int) {
            if meaningful {
                let piece = String(decoding: bytes[start..<end], as: UTF8.self)
                statements.append(piece.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            start = end + 1
            meaningful = false
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: ";"):
                cut(at: index)
                index += 1
            case UInt8(ascii: "-") where Self.byte(bytes, index + 1) == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where Self.byte(bytes, index + 1) == UInt8(ascii: "*"):
                index = Self.endOfBlockComment(bytes, from: index)
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                meaningful = true
                index = Self.endOfQuoted(bytes, from: index, quote: byte)
            case UInt8(ascii: "$"):
                meaningful = true
                index = Self.endOfDollarQuoted(bytes, from: index)
            default:
                if byte != UInt8(ascii: " "), byte != UInt8(ascii: "\n"), byte != UInt8(ascii: "\t"), byte != UInt8(ascii: "\r") {
                    meaningful = true
                }
                index += 1
            }
        }
        cut(at: bytes.count)
        self.statements = statements
    }

    private static func byte(_ bytes: [UInt8], _ index: Int) -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    /// Past the `'` or `"` that closes the string opened at `from` (a doubled quote is one
    /// character of it).
    private static func endOfQuoted(_ bytes: [UInt8], from: Int, quote: UInt8) -> Int {
        var index = from + 1
        while index < bytes.count {
            if bytes[index] == quote {
                if byte(bytes, index + 1) == quote { index += 2; continue }
                return index + 1
            }
            index += 1
        }
        return index
    }

    /// Past the `*/` that closes the comment opened at `from`; comments nest.
    private static func endOfBlockComment(_ bytes: [UInt8], from: Int) -> Int {
        var index = from + 2, depth = 1
        while index < bytes.count, depth > 0 {
            if bytes[index] == UInt8(ascii: "/"), byte(bytes, index + 1) == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if bytes[index] == UInt8(ascii: "*"), byte(bytes, index + 1) == UInt8(ascii: "/") {
                depth -= 1
                index += 2
            } else {
                index += 1
            }
        }
        return index
    }

    /// Past the tag that closes the dollar-quoted body opened at `from`; a `$` that opens no
    /// tag (a parameter such as `$1`) is passed over.
    private static func endOfDollarQuoted(_ bytes: [UInt8], from: Int) -> Int {
        var close = from + 1
        while close < bytes.count, isTagByte(bytes[close]) { close += 1 }
        guard close < bytes.count, bytes[close] == UInt8(ascii: "$"),
              close == from + 1 || !isDigit(bytes[from + 1]) else { return from + 1 }
        let tag = bytes[from...close]
        var index = close + 1
        while index + tag.count <= bytes.count {
            if bytes[index] == UInt8(ascii: "$"), bytes[index..<(index + tag.count)].elementsEqual(tag) { return index + tag.count }
            index += 1
        }
        return bytes.count
    }

    private static func isTagByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || byte == UInt8(ascii: "_") || (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") || byte >= 0x80
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
#endif
