import Foundation

/// How action payloads, props, and node states are turned into bytes. JSON by default; plug in
/// a faster one through ``DurableConfiguration/codec``. The encoding must be deterministic for
/// equal values (digests compare encodings).
public protocol PayloadCodec: Sendable {
    /// Bytes for `value`.
    func encode<T: Encodable>(_ value: T) throws -> [UInt8]
    /// A `T` from `bytes`.
    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T
}

/// JSON with sorted keys (deterministic), via Foundation's encoder.
public struct JSONPayloadCodec: PayloadCodec {
    /// The default codec.
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }
}
