import Workflow

/// Encodes and decodes values known only at run time to be `Codable` (node states, props).
enum StateCoding {
    /// The bytes of `value`, or a `.notCodable` error naming `what`.
    static func encode(_ value: Any, codec: any PayloadCodec, what: @autoclosure () -> String, store: String, instance: String?) throws -> [UInt8] {
        guard let encodable = value as? any Encodable else {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: what(),
                               detail: "\(type(of: value)) is not Encodable",
                               recovery: "Make every durable workflow's State (and the root workflow) Codable")
        }
        return try codec.encode(encodable)
    }

    /// A `T` from `bytes`, or `nil` when `T` is not `Decodable` or the bytes do not decode.
    static func decode<T>(_ type: T.Type, from bytes: [UInt8], codec: any PayloadCodec) -> T? {
        guard let decodable = type as? any Decodable.Type else { return nil }
        func open<D: Decodable>(_ concrete: D.Type) -> Any? { try? codec.decode(concrete, from: bytes) }
        return open(decodable) as? T
    }
}
