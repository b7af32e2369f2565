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
    // One encoder and decoder per codec: their configuration is set once and never changed,
    // and each encode/decode call works on its own state, so sharing them between threads is safe.
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()

    /// The default codec.
    public init() {
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
    }

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }
}
