import Foundation

/// Reads what ``BinaryPayloadCodec`` wrote, in place: containers find their values by offset,
/// nothing is copied into an intermediate tree. Every read checks bounds and types and throws a
/// `DecodingError` naming the coding path.
enum BinaryDecoding {
    /// The bytes being decoded, shared by every container of one decode. They are borrowed (from
    /// an array or straight from the LMDB map) and valid only until the decode returns: decoded
    /// values copy what they keep (strings are built from the bytes).
    struct Input {
        let bytes: UnsafeRawBufferPointer
        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func corrupt(_ codingPath: @autoclosure () -> [any CodingKey], _ what: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: codingPath(), debugDescription: what))
        }

        func byte(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> UInt8 {
            guard offset < bytes.count else { throw corrupt(codingPath(), "the encoding ends early (offset \(offset))") }
            return bytes[offset]
        }

        func tag(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> BinaryTag {
            let raw = try byte(at: offset, codingPath())
            guard let tag = BinaryTag(rawValue: raw) else { throw corrupt(codingPath(), "unknown value type \(raw) at offset \(offset)") }
            return tag
        }

        /// A variable-length integer at `offset` and the offset after it.
        func varint(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> (value: UInt64, end: Int) {
            var value: UInt64 = 0, shift: UInt64 = 0, position = offset
            while true {
                let byte = try self.byte(at: position, codingPath())
                position += 1
                guard shift < 64 else { throw corrupt(codingPath(), "an integer longer than 64 bits at offset \(offset)") }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return (value, position) }
                shift += 7
            }
        }

        /// The offset just after the value starting at `offset`.
        func skip(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int {
            switch try tag(at: offset, codingPath()) {
            case .null, .false, .true: return offset + 1
            case .int, .uint: return try varint(at: offset + 1, codingPath()).end
            case .double:
                guard offset + 9 <= bytes.count else { throw corrupt(codingPath(), "the encoding ends early (offset \(offset))") }
                return offset + 9
            case .string:
                return try stringRange(at: offset + 1, codingPath()).upperBound
            case .array:
                var (count, position) = try varint(at: offset + 1, codingPath())
                while count > 0 {
                    position = try skip(at: position, codingPath())
                    count -= 1
                }
                return position
            case .map:
                var (count, position) = try varint(at: offset + 1, codingPath())
                while count > 0 {
                    position = try skip(at: try stringRange(at: position, codingPath()).upperBound, codingPath())
                    count -= 1
                }
                return position
            }
        }

        /// The bytes of a length-prefixed string whose length starts at `offset`.
        func stringRange(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Range<Int> {
            let (length, start) = try varint(at: offset, codingPath())
            guard length <= UInt64(bytes.count - start) else { throw corrupt(codingPath(), "a string runs past the end (offset \(offset))") }
            return start..<(start + Int(length))
        }

        func string(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> String {
            try expect(.string, at: offset, codingPath())
            let range = try stringRange(at: offset + 1, codingPath())
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        func expect(_ wanted: BinaryTag, at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws {
            let found = try tag(at: offset, codingPath())
            guard found == wanted else {
                throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath(), debugDescription: "expected \(wanted), found \(found)"))
            }
        }

        func bool(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Bool {
            switch try tag(at: offset, codingPath()) {
            case .true: return true
            case .false: return false
            case let other: throw DecodingError.typeMismatch(Bool.self, .init(codingPath: codingPath(), debugDescription: "expected a Bool, found \(other)"))
            }
        }

        func integer<T: FixedWidthInteger>(_ type: T.Type, at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> T {
            let found = try tag(at: offset, codingPath())
            let result: T?
            switch found {
            case .int:
                let raw = try varint(at: offset + 1, codingPath()).value
                result = T(exactly: Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1))))
            case .uint:
                result = T(exactly: try varint(at: offset + 1, codingPath()).value)
            default:
                throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath(), debugDescription: "expected an integer, found \(found)"))
            }
            guard let result else { throw corrupt(codingPath(), "the number does not fit in \(T.self)") }
            return result
        }

        func double(at offset: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Double {
            switch try tag(at: offset, codingPath()) {
            case .double:
                guard offset + 9 <= bytes.count else { throw corrupt(codingPath(), "the encoding ends early (offset \(offset))") }
                var pattern: UInt64 = 0
                for index in 0..<8 { pattern |= UInt64(bytes[offset + 1 + index]) << (8 * UInt64(index)) }
                return Double(bitPattern: pattern)
            case .int: return Double(try integer(Int64.self, at: offset, codingPath()))
            case .uint: return Double(try integer(UInt64.self, at: offset, codingPath()))
            case let other:
                throw DecodingError.typeMismatch(Double.self, .init(codingPath: codingPath(), debugDescription: "expected a number, found \(other)"))
            }
        }
    }

    /// Decodes a `T` from the value at `offset`; primitives without running `init(from:)`.
    static func decode<T: Decodable>(_ type: T.Type, from input: Input, at offset: Int, codingPath: [any CodingKey]) throws -> T {
        if T.self == Int.self { return unsafeBitCast(try input.integer(Int.self, at: offset, codingPath), to: T.self) }
        if T.self == String.self { return unsafeBitCast(try input.string(at: offset, codingPath), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try input.bool(at: offset, codingPath), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try input.double(at: offset, codingPath), to: T.self) }
        if codingPath.isEmpty { return try T(from: RootDecoder(input: input, offset: offset)) }
        return try T(from: DecoderImpl(input: input, offset: offset, codingPath: codingPath))
    }

    /// ``DecoderImpl`` for the value at the root (no coding path), as a struct of three words: it
    /// fits in the existential `init(from:)` receives, so decoding a payload allocates no decoder
    /// (an allocation per payload would be a noticeable part of replaying a small action).
    struct RootDecoder: Decoder {
        let input: Input
        let offset: Int
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(try KeyedContainer<Key>(input: input, offset: offset, codingPath: []))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try UnkeyedContainer(input: input, offset: offset, codingPath: [])
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleValueContainer(input: input, offset: offset, codingPath: [])
        }
    }

    final class DecoderImpl: Decoder {
        let input: Input
        let offset: Int
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(input: Input, offset: Int, codingPath: [any CodingKey]) {
            self.input = input
            self.offset = offset
            self.codingPath = codingPath
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(try KeyedContainer<Key>(input: input, offset: offset, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try UnkeyedContainer(input: input, offset: offset, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleValueContainer(input: input, offset: offset, codingPath: codingPath)
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let input: Input
        let codingPath: [any CodingKey]
        /// Where the map's entries start, and how many there are.
        private let start: Int
        private let count: Int
        /// Each entry's key bytes and value offset, for maps too large to scan on every lookup.
        private var index: [(key: Range<Int>, value: Int)]?

        init(input: Input, offset: Int, codingPath: [any CodingKey]) throws {
            self.input = input
            self.codingPath = codingPath
            let bytes = input.bytes
            if offset + 1 < bytes.count, bytes[offset] == BinaryTag.map.rawValue, bytes[offset + 1] < 0x80 {
                // The common case, under 128 entries: the count is the byte after the tag.
                self.start = offset + 2
                self.count = Int(bytes[offset + 1])
            } else {
                try input.expect(.map, at: offset, codingPath)
                let (count, position) = try input.varint(at: offset + 1, codingPath)
                guard count <= UInt64(input.bytes.count) else { throw input.corrupt(codingPath, "a map claims \(count) entries") }
                self.start = position
                self.count = Int(count)
            }
            if count > 8 { index = try entries() }
        }

        /// Every entry's key bytes and value offset, in encoded (key) order.
        private func entries() throws -> [(key: Range<Int>, value: Int)] {
            if let index { return index }
            var found: [(key: Range<Int>, value: Int)] = []
            found.reserveCapacity(count)
            var position = start
            for _ in 0..<count {
                let key = try input.stringRange(at: position, codingPath)
                found.append((key, key.upperBound))
                position = try input.skip(at: key.upperBound, codingPath)
            }
            return found
        }

        var allKeys: [Key] {
            ((try? entries()) ?? []).compactMap { entry in
                Key(stringValue: String(decoding: UnsafeRawBufferPointer(rebasing: input.bytes[entry.key]), as: UTF8.self))
            }
        }

        /// The offset of `key`'s value: small maps are scanned (cheaper than building an index).
        private func offset(of key: Key) -> Int? {
            var name = key.stringValue
            return name.withUTF8 { wanted -> Int? in
                let bytes = input.bytes
                func matches(_ range: Range<Int>) -> Bool {
                    range.count == wanted.count
                        && (wanted.count == 0 || memcmp(bytes.baseAddress! + range.lowerBound, wanted.baseAddress!, wanted.count) == 0)
                }
                if let index {
                    return index.first { matches($0.key) }?.value
                }
                var position = start
                for _ in 0..<count {
                    guard let key = try? input.stringRange(at: position, codingPath) else { return nil }
                    if matches(key) { return key.upperBound }
                    guard let next = try? input.skip(at: key.upperBound, codingPath) else { return nil }
                    position = next
                }
                return nil
            }
        }

        private func required(_ key: Key) throws -> Int {
            guard let offset = offset(of: key) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \"\(key.stringValue)\""))
            }
            return offset
        }

        func contains(_ key: Key) -> Bool { offset(of: key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool {
            try input.tag(at: try required(key), codingPath + [key]) == .null
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try input.bool(at: try required(key), codingPath + [key]) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try input.string(at: try required(key), codingPath + [key]) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try input.double(at: try required(key), codingPath + [key]) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try input.double(at: try required(key), codingPath + [key])) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try input.integer(type, at: try required(key), codingPath + [key]) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try BinaryDecoding.decode(type, from: input, at: try required(key), codingPath: codingPath + [key])
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            KeyedDecodingContainer(try KeyedContainer<NestedKey>(input: input, offset: try required(key), codingPath: codingPath + [key]))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try UnkeyedContainer(input: input, offset: try required(key), codingPath: codingPath + [key])
        }

        func superDecoder() throws -> any Decoder {
            guard let offset = try entries().first(where: { input.bytes[$0.key].elementsEqual("super".utf8) })?.value else {
                throw DecodingError.keyNotFound(BinaryKey(stringValue: "super"), .init(codingPath: codingPath, debugDescription: "no super value"))
            }
            return DecoderImpl(input: input, offset: offset, codingPath: codingPath)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            DecoderImpl(input: input, offset: try required(key), codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let input: Input
        let codingPath: [any CodingKey]
        let count: Int?
        private(set) var currentIndex = 0
        private var position: Int

        init(input: Input, offset: Int, codingPath: [any CodingKey]) throws {
            self.input = input
            self.codingPath = codingPath
            try input.expect(.array, at: offset, codingPath)
            let (count, position) = try input.varint(at: offset + 1, codingPath)
            guard count <= UInt64(input.bytes.count) else { throw input.corrupt(codingPath, "an array claims \(count) elements") }
            self.count = Int(count)
            self.position = position
        }

        var isAtEnd: Bool { currentIndex >= count! }

        private var elementPath: [any CodingKey] { codingPath + [BinaryKey(intValue: currentIndex)] }

        /// The offset of the next element, advancing past it.
        private mutating func next() throws -> Int {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(Any.self, .init(codingPath: elementPath, debugDescription: "the array has no more elements"))
            }
            let start = position
            position = try input.skip(at: position, elementPath)
            currentIndex += 1
            return start
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, try input.tag(at: position, elementPath) == .null else { return false }
            _ = try next()
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { let path = elementPath; return try input.bool(at: try next(), path) }
        mutating func decode(_ type: String.Type) throws -> String { let path = elementPath; return try input.string(at: try next(), path) }
        mutating func decode(_ type: Double.Type) throws -> Double { let path = elementPath; return try input.double(at: try next(), path) }
        mutating func decode(_ type: Float.Type) throws -> Float { let path = elementPath; return Float(try input.double(at: try next(), path)) }
        mutating func decode(_ type: Int.Type) throws -> Int { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let path = elementPath; return try input.integer(type, at: try next(), path) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let path = elementPath
            return try BinaryDecoding.decode(type, from: input, at: try next(), codingPath: path)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let path = elementPath
            return KeyedDecodingContainer(try KeyedContainer<NestedKey>(input: input, offset: try next(), codingPath: path))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let path = elementPath
            return try UnkeyedContainer(input: input, offset: try next(), codingPath: path)
        }

        mutating func superDecoder() throws -> any Decoder {
            let path = elementPath
            return DecoderImpl(input: input, offset: try next(), codingPath: path)
        }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let input: Input
        let offset: Int
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { (try? input.tag(at: offset, codingPath)) == .null }
        func decode(_ type: Bool.Type) throws -> Bool { try input.bool(at: offset, codingPath) }
        func decode(_ type: String.Type) throws -> String { try input.string(at: offset, codingPath) }
        func decode(_ type: Double.Type) throws -> Double { try input.double(at: offset, codingPath) }
        func decode(_ type: Float.Type) throws -> Float { Float(try input.double(at: offset, codingPath)) }
        func decode(_ type: Int.Type) throws -> Int { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: Int8.Type) throws -> Int8 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: Int16.Type) throws -> Int16 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: Int32.Type) throws -> Int32 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: Int64.Type) throws -> Int64 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: UInt.Type) throws -> UInt { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try input.integer(type, at: offset, codingPath) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try input.integer(type, at: offset, codingPath) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try BinaryDecoding.decode(type, from: input, at: offset, codingPath: codingPath)
        }
    }

    /// A coding key for array positions and `super`.
    struct BinaryKey: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
        init(intValue: Int) { stringValue = "\(intValue)"; self.intValue = intValue }
    }
}
