import Foundation

/// Reads values in ``BinaryPayloadCodec``'s format, in order, for a ``BinaryPayloadRepresentable``
/// type: each read checks the bounds and the value's type and throws a `DecodingError` saying
/// what it expected and found at which offset. The bytes are borrowed for the read (during replay,
/// straight from the store's memory map): keep only what the reads return.
public struct BinaryPayloadReader {
    private let input: BinaryDecoding.Input
    /// The offset of the next value.
    private var position: Int

    private init(bytes: UnsafeRawBufferPointer) {
        input = BinaryDecoding.Input(bytes: bytes)
        position = 1
    }

    /// A `T` read from a whole encoding (marker first); throws when bytes are left over.
    package static func read<T: BinaryPayloadRepresentable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        guard bytes.first == BinaryPayloadCodec.marker else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not a BinaryPayloadCodec encoding (no 0xB1 marker)"))
        }
        var reader = BinaryPayloadReader(bytes: bytes)
        let value = try T(binaryPayload: &reader)
        guard reader.isAtEnd else { throw reader.unexpected("the end of the encoding") }
        return value
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { position >= input.bytes.count }

    /// Reads the start of a keyed container and returns its number of entries.
    public mutating func readMap() throws -> Int { try readCount(of: .map) }

    /// Reads the start of a keyed container of exactly `count` entries.
    public mutating func readMap(count: Int) throws {
        let found = try readCount(of: .map)
        guard found == count else { throw unexpected("a map of \(count) entries (it has \(found))") }
    }

    /// Reads the key of the next map entry, which must be `expected`.
    public mutating func readKey(_ expected: StaticString) throws {
        let range = try input.stringRange(at: position, [])
        let bytes = input.bytes
        let matches = expected.withUTF8Buffer { wanted in
            wanted.count == range.count
                && (wanted.count == 0 || memcmp(bytes.baseAddress! + range.lowerBound, wanted.baseAddress!, wanted.count) == 0)
        }
        guard matches else { throw unexpected("the key \"\(expected)\"") }
        position = range.upperBound
    }

    /// Reads the start of an unkeyed container and returns its number of elements.
    public mutating func readArray() throws -> Int { try readCount(of: .array) }

    /// Reads a `nil` if one is next; otherwise reads nothing and returns `false`.
    public mutating func readNil() throws -> Bool {
        guard try input.tag(at: position, []) == .null else { return false }
        position += 1
        return true
    }

    /// Reads a `Bool`.
    public mutating func read(_ type: Bool.Type) throws -> Bool {
        let value = try input.bool(at: position, [])
        position += 1
        return value
    }

    /// Reads an `Int` (written as any integer type that fits).
    public mutating func read(_ type: Int.Type) throws -> Int { try integer(type) }
    /// Reads an `Int64`.
    public mutating func read(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    /// Reads a `UInt64`.
    public mutating func read(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    /// Reads a `UInt`.
    public mutating func read(_ type: UInt.Type) throws -> UInt { try integer(type) }

    /// Reads a `Double` (or an integer, as `Codable` decoding accepts).
    public mutating func read(_ type: Double.Type) throws -> Double {
        let value = try input.double(at: position, [])
        position = try input.skip(at: position, [])
        return value
    }

    /// Reads a `String`.
    public mutating func read(_ type: String.Type) throws -> String {
        let value = try input.string(at: position, [])
        position = try input.stringRange(at: position + 1, []).upperBound
        return value
    }

    /// Reads a nested value that reads its own bytes.
    public mutating func read<T: BinaryPayloadRepresentable>(_ type: T.Type) throws -> T { try T(binaryPayload: &self) }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let found = try input.tag(at: position, [])
        guard found == .int || found == .uint else { throw unexpected("an integer (found \(found))") }
        let (raw, end) = try input.varint(at: position + 1, [])
        let value = found == .int ? T(exactly: Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))) : T(exactly: raw)
        guard let value else { throw unexpected("a number that fits in \(T.self)") }
        position = end
        return value
    }

    private mutating func readCount(of tag: BinaryTag) throws -> Int {
        let bytes = input.bytes
        // The common case, a count under 128: one byte after the tag.
        if position + 1 < bytes.count, bytes[position] == tag.rawValue, bytes[position + 1] < 0x80 {
            position += 2
            return Int(bytes[position - 1])
        }
        try input.expect(tag, at: position, [])
        let (count, end) = try input.varint(at: position + 1, [])
        guard count <= UInt64(input.bytes.count) else { throw unexpected("a plausible \(tag) size (it claims \(count))") }
        position = end
        return Int(count)
    }

    private func unexpected(_ what: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "expected \(what) at offset \(position)"))
    }
}
