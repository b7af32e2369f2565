import Foundation

/// How action payloads, props, and node states are turned into bytes: ``BinaryPayloadCodec`` by
/// default, ``JSONPayloadCodec`` or your own through `DurableConfiguration.codec`. The encoding
/// must be deterministic for equal values (digests compare encodings). Each instance records the
/// ``name`` of the codec it was started with and is always read and written with that codec.
public protocol PayloadCodec: Sendable {
    /// A stable name recorded with each instance (default: the type's name).
    var name: String { get }
    /// Bytes for `value`.
    func encode<T: Encodable>(_ value: T) throws -> [UInt8]
    /// Appends the bytes for `value` to `bytes` (the engine reuses one buffer for digests and
    /// log records). The default appends ``encode(_:)``'s result.
    func encode<T: Encodable>(_ value: T, appendingTo bytes: inout [UInt8]) throws
    /// A `T` from `bytes`.
    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T
    /// A `T` from bytes that are valid only during the call (replay passes them straight from
    /// the store's memory map). The default copies them into an array for `decode(_:from:)`.
    func decode<T: Decodable>(_ type: T.Type, fromBuffer bytes: UnsafeRawBufferPointer) throws -> T
}

extension PayloadCodec {
    public func encode<T: Encodable>(_ value: T, appendingTo bytes: inout [UInt8]) throws {
        bytes.append(contentsOf: try encode(value))
    }

    public func decode<T: Decodable>(_ type: T.Type, fromBuffer bytes: UnsafeRawBufferPointer) throws -> T {
        try decode(type, from: Array(bytes))
    }

    /// The codec type's module-qualified name.
    public var name: String { String(reflecting: Self.self) }
}

/// The codecs a store knows by name, for instances whose configuration does not choose one.
package enum BuiltInCodecs {
    package static func codec(named name: String) -> (any PayloadCodec)? {
        switch name {
        case JSONPayloadCodec.codecName: return JSONPayloadCodec()
        case BinaryPayloadCodec.codecName: return BinaryPayloadCodec()
        default: return nil
        }
    }

    /// The codec that wrote `payload`, judged by its first byte (for imported logs).
    package static func name(ofPayload payload: [UInt8]) -> String {
        payload.first == BinaryPayloadCodec.marker ? BinaryPayloadCodec.codecName : JSONPayloadCodec.codecName
    }
}

/// JSON with sorted keys and canonically ordered sets (deterministic), via Foundation's encoder: human-readable payloads at
/// several times the cost of ``BinaryPayloadCodec``.
public struct JSONPayloadCodec: PayloadCodec {
    static let codecName = "json"

    /// `"json"`.
    public var name: String { Self.codecName }

    // One encoder and decoder per codec: their configuration is set once and never changed,
    // and each encode/decode call works on its own state, so sharing them between threads is safe.
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()

    /// The codec.
    public init() {
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
    }

    /// Sets, and dictionaries keyed by other types than `String` or `Int`, are written in
    /// canonical order (not in the process's hash order), so equal values give equal bytes in
    /// every process.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if canonicalOrderPassesThrough(T.self) { return Array(try encoder.encode(value)) }
        return Array(try encoder.encode(CanonicalOrder(value: value)))
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }

    public func decode<T: Decodable>(_ type: T.Type, fromBuffer bytes: UnsafeRawBufferPointer) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }
}
