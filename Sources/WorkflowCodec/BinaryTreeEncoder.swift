/// The reference encoder: each value becomes a tree of items, written out with map entries in
/// key order. Every faster route must write exactly its bytes (docs/binary-codec.md).
package enum BinaryEncoding {
    /// An encoded value before it is written out: containers are classes because `Encoder`
    /// hands them out before their contents are encoded.
    enum Item {
        case null
        case bool(Bool)
        case int(Int64)
        case uint(UInt64)
        case double(Double)
        case string(String)
        case array(ArrayItems)
        case map(MapItems)
        /// A value still being encoded by a nested encoder (super encoders, nested values).
        case deferred(EncoderImpl)
    }

    final class ArrayItems {
        var items: [Item] = []
    }

    final class MapItems {
        var entries: [(key: String, item: Item)] = []
    }

    /// The item for `value`; primitives are recognised without running their `encode(to:)`.
    static func item<T: Encodable>(for value: T, codingPath: [any CodingKey]) throws -> Item {
        if let primitive = primitive(value) { return primitive }
        let encoder = EncoderImpl(codingPath: codingPath)
        try value.encode(to: encoder)
        let item = encoder.item ?? .map(MapItems())
        if let unordered = T.self as? any UnorderedCollection.Type { return canonical(item, of: unordered) }
        return item
    }

    @inline(__always)
    static func primitive<T>(_ value: T) -> Item? {
        if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if T.self == UInt64.self { return .uint(unsafeBitCast(value, to: UInt64.self)) }
        if T.self == UInt8.self { return .uint(UInt64(unsafeBitCast(value, to: UInt8.self))) }
        return nil
    }

    /// Appends `item`'s bytes; map entries in key order (the last value of a repeated key wins).
    static func write(_ item: Item, to out: inout [UInt8]) {
        switch item {
        case .null: out.append(BinaryTag.null.rawValue)
        case .bool(let value): out.append(value ? BinaryTag.true.rawValue : BinaryTag.false.rawValue)
        case .int(let value):
            out.append(BinaryTag.int.rawValue)
            writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &out)
        case .uint(let value):
            out.append(BinaryTag.uint.rawValue)
            writeVarint(value, to: &out)
        case .double(let value):
            out.append(BinaryTag.double.rawValue)
            withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .string(let value):
            out.append(BinaryTag.string.rawValue)
            writeString(value, to: &out)
        case .array(let array):
            out.append(BinaryTag.array.rawValue)
            writeVarint(UInt64(array.items.count), to: &out)
            for element in array.items { write(element, to: &out) }
        case .map(let map):
            out.append(BinaryTag.map.rawValue)
            var entries = map.entries
            if entries.count > 1 {
                // Sort by key, keeping the order of repeated keys, then keep each key's last value.
                let indexed = entries.enumerated().sorted { $0.element.key < $1.element.key || ($0.element.key == $1.element.key && $0.offset < $1.offset) }
                entries = []
                entries.reserveCapacity(indexed.count)
                for (_, entry) in indexed {
                    if let last = entries.last, last.key == entry.key { entries.removeLast() }
                    entries.append(entry)
                }
            }
            writeVarint(UInt64(entries.count), to: &out)
            for entry in entries {
                writeString(entry.key, to: &out)
                write(entry.item, to: &out)
            }
        case .deferred(let encoder):
            write(encoder.item ?? .map(MapItems()), to: &out)
        }
    }

    /// Stores `value` as a variable-length integer at `address` (room for 10 bytes); returns its
    /// length.
    @inline(__always)
    package static func storeVarint(_ value: UInt64, at address: UnsafeMutableRawPointer) -> Int {
        var rest = value, count = 0
        while rest >= 0x80 {
            address.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: count, as: UInt8.self)
            rest >>= 7
            count += 1
        }
        address.storeBytes(of: UInt8(rest), toByteOffset: count, as: UInt8.self)
        return count + 1
    }

    static func writeVarint(_ value: UInt64, to out: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    static func writeString(_ value: String, to out: inout [UInt8]) {
        var text = value
        text.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        }
    }

    // MARK: Encoder

    final class EncoderImpl: Encoder {
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        /// What was encoded: set by the first container (containers of one encoder must agree).
        var item: Item?

        init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let map: MapItems
            if case .map(let existing) = item { map = existing } else {
                map = MapItems()
                item = .map(map)
            }
            return KeyedEncodingContainer(KeyedContainer<Key>(map: map, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let array: ArrayItems
            if case .array(let existing) = item { array = existing } else {
                array = ArrayItems()
                item = .array(array)
            }
            return UnkeyedContainer(array: array, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let map: MapItems
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { map.entries.append((key.stringValue, .null)) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { map.entries.append((key.stringValue, .bool(value))) }
        mutating func encode(_ value: String, forKey key: Key) throws { map.entries.append((key.stringValue, .string(value))) }
        mutating func encode(_ value: Double, forKey key: Key) throws { map.entries.append((key.stringValue, .double(value))) }
        mutating func encode(_ value: Float, forKey key: Key) throws { map.entries.append((key.stringValue, .double(Double(value)))) }
        mutating func encode(_ value: Int, forKey key: Key) throws { map.entries.append((key.stringValue, .int(Int64(value)))) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { map.entries.append((key.stringValue, .int(Int64(value)))) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { map.entries.append((key.stringValue, .int(Int64(value)))) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { map.entries.append((key.stringValue, .int(Int64(value)))) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { map.entries.append((key.stringValue, .int(value))) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { map.entries.append((key.stringValue, .uint(UInt64(value)))) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { map.entries.append((key.stringValue, .uint(UInt64(value)))) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { map.entries.append((key.stringValue, .uint(UInt64(value)))) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { map.entries.append((key.stringValue, .uint(UInt64(value)))) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { map.entries.append((key.stringValue, .uint(value))) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            map.entries.append((key.stringValue, try BinaryEncoding.item(for: value, codingPath: codingPath + [key])))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = MapItems()
            map.entries.append((key.stringValue, .map(nested)))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(map: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayItems()
            map.entries.append((key.stringValue, .array(nested)))
            return UnkeyedContainer(array: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(key: "super") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key.stringValue) }

        private func superEncoder(key: String) -> any Encoder {
            let encoder = EncoderImpl(codingPath: codingPath)
            map.entries.append((key, .deferred(encoder)))
            return encoder
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let array: ArrayItems
        let codingPath: [any CodingKey]
        var count: Int { array.items.count }

        mutating func encodeNil() throws { array.items.append(.null) }
        mutating func encode(_ value: Bool) throws { array.items.append(.bool(value)) }
        mutating func encode(_ value: String) throws { array.items.append(.string(value)) }
        mutating func encode(_ value: Double) throws { array.items.append(.double(value)) }
        mutating func encode(_ value: Float) throws { array.items.append(.double(Double(value))) }
        mutating func encode(_ value: Int) throws { array.items.append(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { array.items.append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { array.items.append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { array.items.append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { array.items.append(.int(value)) }
        mutating func encode(_ value: UInt) throws { array.items.append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt8) throws { array.items.append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt16) throws { array.items.append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt32) throws { array.items.append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt64) throws { array.items.append(.uint(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            array.items.append(try BinaryEncoding.item(for: value, codingPath: codingPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let nested = MapItems()
            array.items.append(.map(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(map: nested, codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = ArrayItems()
            array.items.append(.array(nested))
            return UnkeyedContainer(array: nested, codingPath: codingPath)
        }

        mutating func superEncoder() -> any Encoder {
            let encoder = EncoderImpl(codingPath: codingPath)
            array.items.append(.deferred(encoder))
            return encoder
        }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: EncoderImpl
        var codingPath: [any CodingKey] { encoder.codingPath }

        func encodeNil() throws { encoder.item = .null }
        func encode(_ value: Bool) throws { encoder.item = .bool(value) }
        func encode(_ value: String) throws { encoder.item = .string(value) }
        func encode(_ value: Double) throws { encoder.item = .double(value) }
        func encode(_ value: Float) throws { encoder.item = .double(Double(value)) }
        func encode(_ value: Int) throws { encoder.item = .int(Int64(value)) }
        func encode(_ value: Int8) throws { encoder.item = .int(Int64(value)) }
        func encode(_ value: Int16) throws { encoder.item = .int(Int64(value)) }
        func encode(_ value: Int32) throws { encoder.item = .int(Int64(value)) }
        func encode(_ value: Int64) throws { encoder.item = .int(value) }
        func encode(_ value: UInt) throws { encoder.item = .uint(UInt64(value)) }
        func encode(_ value: UInt8) throws { encoder.item = .uint(UInt64(value)) }
        func encode(_ value: UInt16) throws { encoder.item = .uint(UInt64(value)) }
        func encode(_ value: UInt32) throws { encoder.item = .uint(UInt64(value)) }
        func encode(_ value: UInt64) throws { encoder.item = .uint(value) }
        func encode<T: Encodable>(_ value: T) throws {
            encoder.item = try BinaryEncoding.item(for: value, codingPath: codingPath)
        }
    }
}
