/// The standard collections whose `encode(to:)` writes elements in the process's hash order
/// (seeded per process): a `Set`, and a `Dictionary` whose keys are neither `String` nor `Int`
/// (those go to an unkeyed container as key, value, key, value...). ``BinaryPayloadCodec`` puts
/// their elements in a canonical order, so equal values encode to equal bytes in every process
/// (rule D9): elements sorted by their encoded bytes, or pairs by their key's encoded bytes.
/// (A dictionary keyed by `String` or `Int` is a keyed container, whose entries the codec
/// always writes in key order.) ``JSONPayloadCodec`` writes them in the same order through
/// ``CanonicalOrder``.
protocol UnorderedCollection: CanonicallyGrouped {
    /// Whether the unkeyed encoding is a sequence of key-value pairs rather than of elements.
    static var encodesPairs: Bool { get }
    /// Whether its encoding may be an unkeyed container in hash order (a dictionary keyed by
    /// `String` or `Int` never is).
    static var mayEncodeInHashOrder: Bool { get }
}

extension Set: UnorderedCollection where Element: Encodable {
    static var encodesPairs: Bool { false }
    static var mayEncodeInHashOrder: Bool { true }
}

extension Dictionary: UnorderedCollection where Key: Encodable, Value: Encodable {
    static var encodesPairs: Bool { true }
    static var mayEncodeInHashOrder: Bool { Key.self != String.self && Key.self != Int.self }
}

extension BinaryEncoding {
    /// `item` (the encoding of a value of `type`) with its elements in canonical order.
    static func canonical(_ item: Item, of type: any UnorderedCollection.Type) -> Item {
        guard case .array(let array) = item, array.items.count > 1 else { return item }
        let width = type.encodesPairs ? 2 : 1
        guard array.items.count % width == 0 else { return item }
        var groups: [(key: [UInt8], rest: [UInt8], items: ArraySlice<Item>)] = []
        groups.reserveCapacity(array.items.count / width)
        for start in stride(from: 0, to: array.items.count, by: width) {
            var key: [UInt8] = [], rest: [UInt8] = []
            write(array.items[start], to: &key)
            if width == 2 { write(array.items[start + 1], to: &rest) }
            groups.append((key, rest, array.items[start..<start + width]))
        }
        groups.sort { $0.key.lexicographicallyPrecedes($1.key) || ($0.key == $1.key && $0.rest.lexicographicallyPrecedes($1.rest)) }
        let sorted = ArrayItems()
        sorted.items.reserveCapacity(array.items.count)
        for group in groups { sorted.items.append(contentsOf: group.items) }
        return .array(sorted)
    }
}

/// Whether `value` holds, in any of its stored properties at any depth, a collection whose
/// `encode(to:)` writes in the process's hash order (a `Set`, a `Dictionary` not keyed by
/// `String` or `Int`), whatever its own `encode(to:)` makes of it: the states whose digests, if
/// recorded before encodings were canonical, differ between processes. Reflection, for messages
/// only (a divergence's hint).
package func holdsUnorderedCollection(_ value: Any, depth: Int = 0) -> Bool {
    if let unordered = value as? any UnorderedCollection, type(of: unordered).mayEncodeInHashOrder { return true }
    guard depth < 16 else { return false }
    return Mirror(reflecting: value).children.prefix(10_000).contains { holdsUnorderedCollection($0.value, depth: depth + 1) }
}
