/// Writes values in ``BinaryPayloadCodec``'s format for a ``BinaryPayloadRepresentable`` type.
///
/// To match what `Codable` writes:
/// - a keyed container (a struct, a class) is ``writeMap(count:)`` followed by each present field
///   as ``writeKey(_:)`` and its value, keys in ascending order (as `String` compares them); a
///   synthesized `encode(to:)` leaves out `nil` optionals, so they count only when present;
/// - an unkeyed container (an array, a set) is ``writeArray(count:)`` followed by its elements;
/// - `Int8`...`Int64` are written as `Int`, unsigned integers as `UInt64`, `Float` as `Double`;
/// - an enum with a raw value is its raw value; one with associated values is a map of one key,
///   the case name, to a map of its labels (`_0`, `_1` for unlabelled ones).
public struct BinaryPayloadWriter {
    /// The bytes written so far (the caller's buffer, swapped in for the call).
    var bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// Appends the marker and `value`'s own bytes to `out`.
    package static func append<T: BinaryPayloadRepresentable>(_ value: T, to out: inout [UInt8]) {
        out.append(BinaryPayloadCodec.marker)
        var writer = BinaryPayloadWriter(bytes: [])
        swap(&writer.bytes, &out)
        value.writeBinaryPayload(to: &writer)
        swap(&writer.bytes, &out)
    }

    /// Starts a keyed container of `count` entries.
    public mutating func writeMap(count: Int) {
        bytes.append(BinaryTag.map.rawValue)
        BinaryEncoding.writeVarint(UInt64(count), to: &bytes)
    }

    /// Writes the key of the next map entry; its value follows.
    public mutating func writeKey(_ key: StaticString) {
        key.withUTF8Buffer { utf8 in
            BinaryEncoding.writeVarint(UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    /// Starts an unkeyed container of `count` elements.
    public mutating func writeArray(count: Int) {
        bytes.append(BinaryTag.array.rawValue)
        BinaryEncoding.writeVarint(UInt64(count), to: &bytes)
    }

    /// Writes `nil` (what `encodeNil` writes).
    public mutating func writeNil() { bytes.append(BinaryTag.null.rawValue) }

    /// Writes a `Bool`.
    public mutating func write(_ value: Bool) { BinaryEncoding.writeBool(value, to: &bytes) }
    /// Writes an `Int` (and how `Codable` writes every signed integer type).
    public mutating func write(_ value: Int) { BinaryEncoding.writeInt(Int64(value), to: &bytes) }
    /// Writes an `Int64`.
    public mutating func write(_ value: Int64) { BinaryEncoding.writeInt(value, to: &bytes) }
    /// Writes a `UInt64` (and how `Codable` writes every unsigned integer type).
    public mutating func write(_ value: UInt64) { BinaryEncoding.writeUInt(value, to: &bytes) }
    /// Writes a `UInt`.
    public mutating func write(_ value: UInt) { BinaryEncoding.writeUInt(UInt64(value), to: &bytes) }
    /// Writes a `Double` (and how `Codable` writes a `Float`).
    public mutating func write(_ value: Double) { BinaryEncoding.writeDouble(value, to: &bytes) }
    /// Writes a `String`.
    public mutating func write(_ value: String) { BinaryEncoding.writeTaggedString(value, to: &bytes) }
    /// Writes a nested value that writes its own bytes.
    public mutating func write<T: BinaryPayloadRepresentable>(_ value: T) { value.writeBinaryPayload(to: &self) }
}
