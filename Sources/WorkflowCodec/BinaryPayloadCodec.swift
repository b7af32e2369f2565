/// A compact, self-describing binary encoding of `Codable` values: several times faster than
/// JSON to decode and encode, and deterministic (keyed containers are written in key order), so
/// digests can compare encodings.
///
/// Every value starts with a one-byte type; integers are variable-length, strings and keys are
/// length-prefixed UTF-8, keyed containers are maps from key to value. The whole encoding
/// starts with the byte `0xB1`, which no JSON text starts with, so tools (`wfctl`) tell the two
/// apart and show either as JSON. Decoding accepts what the encoding of the same types wrote,
/// including integers of another width that fit and fields added with optional types.
public struct BinaryPayloadCodec: PayloadCodec {
    /// The first byte of every encoding.
    public static let marker: UInt8 = 0xB1
    static let codecName = "binary"

    /// `"binary"`.
    public var name: String { Self.codecName }

    private let encoders = BinaryEncoding.StreamEncoderPool()

    /// The codec.
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        try encode(value, appendingTo: &out)
        return out
    }

    public func encode<T: Encodable>(_ value: T, appendingTo out: inout [UInt8]) throws {
        out.append(Self.marker)
        do {
            if try BinaryEncoding.stream(value, onto: &out, encoders: encoders) { return }
            // The rare value the stream cannot follow: the same bytes through a tree of items.
            BinaryEncoding.write(try BinaryEncoding.item(for: value, codingPath: []), to: &out)
        } catch {
            out.removeLast()
            throw error
        }
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try bytes.withUnsafeBytes { try decode(type, fromBuffer: $0) }
    }

    /// Reads the value in place: replay decodes payloads straight from the LMDB map.
    public func decode<T: Decodable>(_ type: T.Type, fromBuffer bytes: UnsafeRawBufferPointer) throws -> T {
        guard bytes.first == Self.marker else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not a BinaryPayloadCodec encoding (no 0xB1 marker)"))
        }
        return try BinaryDecoding.decode(type, from: BinaryDecoding.Input(bytes: bytes), at: 1, codingPath: [])
    }
}

/// The one-byte types of encoded values.
package enum BinaryTag: UInt8 {
    case null = 0, `false` = 1, `true` = 2, int = 3, uint = 4, double = 5, string = 6, array = 7, map = 8
}
