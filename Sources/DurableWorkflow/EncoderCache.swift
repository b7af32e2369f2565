import Workflow

/// Encoders for values whose types are known only at run time (actions, node states), looked up
/// once per type: casting a value to `DurableAction` or `Encodable` cost more than encoding a
/// small one, so each type is cast once and its encoder kept. Not thread-safe: each journal and
/// each replay has its own.
final class EncoderCache {
    /// A buffer the cache's user encodes into and reads before the next encoding (digests).
    @exclusivity(unchecked) var scratch: [UInt8] = []

    /// How to log one action type: found once, shared by its entries in a batch.
    struct ActionEncoder {
        let tag: String
        let version: Int
        let encoding: any ValueEncoding.Type
    }

    @exclusivity(unchecked) private var actions = PerType<ActionEncoder>()
    @exclusivity(unchecked) private var states = PerType<any ValueEncoding.Type>()

    /// The encoder of action type `A`; `nil` when `A` is not a ``DurableAction``.
    func actionEncoder<A>(for type: A.Type) -> ActionEncoder? {
        actions.value(for: ObjectIdentifier(type)) { (type as? any DurableAction.Type).map { Self.actionEncoder(of: $0) } }
    }

    /// The encoder of values of type `T`; `nil` when `T` is not `Encodable`.
    func stateEncoder<T>(for type: T.Type) -> (any ValueEncoding.Type)? {
        states.value(for: ObjectIdentifier(type)) { (type as? any Encodable.Type).map { Self.encoder(of: $0) } }
    }

    private static func actionEncoder<D: DurableAction>(of type: D.Type) -> ActionEncoder {
        ActionEncoder(tag: D.tag, version: D.version, encoding: TypedEncoding<D>.self)
    }

    private static func encoder<E: Encodable>(of type: E.Type) -> any ValueEncoding.Type {
        TypedEncoding<E>.self
    }
}

/// Appends the encoding of the value at a pointer to the type it was made for (an action or a
/// node's state): a static requirement of an empty generic type, held as a metatype, which has no
/// reference count and is copied as two words. (A closure's context was retained on the host's
/// thread and released on the writer's for every entry, and the two threads fought over its
/// cache line; an existential of an empty struct cost witness calls to copy and destroy.)
protocol ValueEncoding: Sendable {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws
}

private enum TypedEncoding<E: Encodable>: ValueEncoding {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws {
        try codec.encode(pointer.assumingMemoryBound(to: E.self).pointee, appendingTo: &bytes)
    }
}

/// What was found for each type, the type seen last checked before the dictionary: a host mostly
/// logs one action type and digests one state type in a row. Keyed by `ObjectIdentifier` rather
/// than generic over the type: a method generic over both the type and `Value` is not
/// specialised, and looked up `Optional<Value>`'s metadata on every call.
private struct PerType<Value> {
    private var found: [ObjectIdentifier: Value?] = [:]
    private var lastType: ObjectIdentifier?
    private var last: Value?

    mutating func value(for id: ObjectIdentifier, _ make: () -> Value?) -> Value? {
        if id == lastType { return last }
        let value: Value?
        if let cached = found[id] {
            value = cached
        } else {
            value = make()
            found[id] = value
        }
        lastType = id
        last = value
        return value
    }
}
