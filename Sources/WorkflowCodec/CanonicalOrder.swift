import Foundation

/// A value that, encoded by any `Encoder`, writes the unordered collections inside it (see
/// ``UnorderedCollection``) in canonical order: elements, or key-value pairs, sorted by their
/// ``BinaryPayloadCodec`` bytes. Everything else reaches the encoder unchanged, in the same
/// containers, so a value without such collections encodes exactly as it would alone. Values an
/// encoder may treat specially (`Date`, `Data`, `URL`, `Decimal`: `JSONEncoder` does) are handed
/// over as they are.
struct CanonicalOrder<Value: Encodable>: Encodable {
    let value: Value

    func encode(to encoder: any Encoder) throws {
        if let unordered = value as? any UnorderedCollection, type(of: unordered).mayEncodeInHashOrder {
            var container = encoder.unkeyedContainer()
            for element in try unordered.canonicalElements() { try Self.encodeElement(element, into: &container) }
        } else {
            try value.encode(to: OrderingEncoder(base: encoder))
        }
    }

    private static func encodeElement<E: Encodable>(_ element: E, into container: inout any UnkeyedEncodingContainer) throws {
        if canonicalOrderPassesThrough(E.self) { try container.encode(element) } else { try container.encode(CanonicalOrder<E>(value: element)) }
    }
}

/// Whether values of `type` go to the encoder as they are: they hold no unordered collection,
/// and an encoder may treat them specially. Every type a single-value container encodes itself
/// (the scalars) must be here: wrapped, it would be handed back to this wrapper without end.
func canonicalOrderPassesThrough<T>(_ type: T.Type) -> Bool {
    type is any FixedWidthInteger.Type || type is any BinaryFloatingPoint.Type || type == String.self || type == Bool.self
        || type == Date.self || type == Data.self || type == URL.self || type == Decimal.self || type == UUID.self
}

extension UnorderedCollection {
    /// The encoded elements in canonical order (pairs flattened: key, value, key, value…).
    func canonicalElements() throws -> [any Encodable] {
        try canonicalGroups().flatMap { $0 }
    }
}

extension Set: CanonicallyGrouped where Element: Encodable {
    func canonicalGroups() throws -> [[any Encodable]] {
        let codec = BinaryPayloadCodec()
        return try map { (key: try codec.encode($0), element: $0) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map { [$0.element] }
    }
}

extension Dictionary: CanonicallyGrouped where Key: Encodable, Value: Encodable {
    func canonicalGroups() throws -> [[any Encodable]] {
        let codec = BinaryPayloadCodec()
        return try map { (key: try codec.encode($0.key), pair: [$0.key as any Encodable, $0.value as any Encodable]) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map(\.pair)
    }
}

/// The groups an unordered collection encodes: one element, or one key and its value.
protocol CanonicallyGrouped {
    func canonicalGroups() throws -> [[any Encodable]]
}

/// Forwards every container to `base`'s, wrapping nested values in ``CanonicalOrder``.
private struct OrderingEncoder: Encoder {
    let base: any Encoder
    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(OrderingKeyedContainer(base: base.container(keyedBy: type)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { OrderingUnkeyedContainer(base: base.unkeyedContainer()) }

    func singleValueContainer() -> any SingleValueEncodingContainer { OrderingSingleValueContainer(base: base.singleValueContainer()) }
}

private struct OrderingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var base: KeyedEncodingContainer<Key>
    var codingPath: [any CodingKey] { base.codingPath }

    mutating func encodeNil(forKey key: Key) throws { try base.encodeNil(forKey: key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if canonicalOrderPassesThrough(T.self) { try base.encode(value, forKey: key) } else { try base.encode(CanonicalOrder(value: value), forKey: key) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(OrderingKeyedContainer<NestedKey>(base: base.nestedContainer(keyedBy: keyType, forKey: key)))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        OrderingUnkeyedContainer(base: base.nestedUnkeyedContainer(forKey: key))
    }
    mutating func superEncoder() -> any Encoder { OrderingEncoder(base: base.superEncoder()) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { OrderingEncoder(base: base.superEncoder(forKey: key)) }
}

private struct OrderingUnkeyedContainer: UnkeyedEncodingContainer {
    var base: any UnkeyedEncodingContainer
    var codingPath: [any CodingKey] { base.codingPath }
    var count: Int { base.count }

    mutating func encodeNil() throws { try base.encodeNil() }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if canonicalOrderPassesThrough(T.self) { try base.encode(value) } else { try base.encode(CanonicalOrder(value: value)) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(OrderingKeyedContainer<NestedKey>(base: base.nestedContainer(keyedBy: keyType)))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { OrderingUnkeyedContainer(base: base.nestedUnkeyedContainer()) }
    mutating func superEncoder() -> any Encoder { OrderingEncoder(base: base.superEncoder()) }
}

private struct OrderingSingleValueContainer: SingleValueEncodingContainer {
    var base: any SingleValueEncodingContainer
    var codingPath: [any CodingKey] { base.codingPath }

    mutating func encodeNil() throws { try base.encodeNil() }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if canonicalOrderPassesThrough(T.self) { try base.encode(value) } else { try base.encode(CanonicalOrder(value: value)) }
    }
}
