@testable import WorkflowCodec
import Foundation
import TestSupport
import Testing

// Many random values of every `Codable` shape, through every route of the binary codec: the item
// tree (the reference), the stream encoder (with and without keyed containers kept for reuse),
// the codec's public encode, decoding from an array and from a buffer, the JSON rendering, and a
// type's own bytes (`BinaryPayloadRepresentable`). Each route must write exactly the reference's
// bytes and read them back. The seed is fixed, so a failure names a value that can be rebuilt.

private struct Inner: Codable, Equatable {
    var flag: Bool
    var ratio: Double
    var small: UInt8
    var name: String?
}

private enum Shape: Codable, Equatable {
    case none
    case point(x: Int64, y: Int64)
    case label(String)
    case nested(Inner?)
    case many([Int8], tail: UInt64?)
}

private enum Level: String, Codable, Equatable {
    case low, middle, high
}

/// Every ordered shape: the stream encoder follows all of it.
private struct Sample: Codable, Equatable {
    var int: Int
    var i64: Int64
    var u64: UInt64
    var i8: Int8
    var i16: Int16
    var i32: Int32
    var u8: UInt8
    var u16: UInt16
    var u32: UInt32
    var double: Double
    var float: Float
    var text: String
    var optionalText: String?
    var inner: Inner?
    var shapes: [Shape]
    var matrix: [[Int?]?]
    var level: Level
    var levels: [Level?]
    var data: Data
    var date: Date
    var id: UUID
}

/// Hash-ordered collections: the stream hands them to the tree, which writes them in canonical order.
private struct Unordered: Codable, Equatable {
    var tags: Set<String>
    var byName: [String: Int]
    var byNumber: [Int: Shape]
    var sets: [Set<Int>]
    var byLevel: [Level: [String]]
}

/// A type that writes and reads its own bytes, which must be its `Codable` bytes.
private struct Reading: Codable, Equatable, BinaryPayloadRepresentable {
    var sensor: Int64
    var label: String?
    var level: Double
    var tags: [String]
    var ok: Bool
    var total: UInt64

    init(sensor: Int64, label: String?, level: Double, tags: [String], ok: Bool, total: UInt64) {
        self.sensor = sensor
        self.label = label
        self.level = level
        self.tags = tags
        self.ok = ok
        self.total = total
    }

    func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
        writer.writeMap(count: label == nil ? 5 : 6)
        if let label { writer.writeKey("label"); writer.write(label) }
        writer.writeKey("level"); writer.write(level)
        writer.writeKey("ok"); writer.write(ok)
        writer.writeKey("sensor"); writer.write(sensor)
        writer.writeKey("tags"); writer.writeArray(count: tags.count)
        for tag in tags { writer.write(tag) }
        writer.writeKey("total"); writer.write(total)
    }

    init(binaryPayload reader: inout BinaryPayloadReader) throws {
        let count = try reader.readMap()
        if count == 6 {
            try reader.readKey("label"); label = try reader.read(String.self)
        } else {
            label = nil
        }
        try reader.readKey("level"); level = try reader.read(Double.self)
        try reader.readKey("ok"); ok = try reader.read(Bool.self)
        try reader.readKey("sensor"); sensor = try reader.read(Int64.self)
        try reader.readKey("tags")
        tags = try (0..<reader.readArray()).map { _ in try reader.read(String.self) }
        try reader.readKey("total"); total = try reader.read(UInt64.self)
    }
}

/// Makes random values, leaning to the edges (extremes, zero, empty, long).
private struct Values {
    var random: SeededGenerator

    mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type = T.self) -> T {
        switch random.next() % 6 {
        case 0: return .min
        case 1: return .max
        case 2: return 0
        case 3: return T(truncatingIfNeeded: random.next() % 200) &- 100
        default: return T(truncatingIfNeeded: random.next())
        }
    }

    /// Finite doubles: extremes, zeros, subnormals, integers, fractions, random bit patterns.
    mutating func double() -> Double {
        switch random.next() % 7 {
        case 0: return [Double.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0, 0][Int(random.next() % 5)]
        case 1: return Double(Int64(truncatingIfNeeded: random.next()) >> 11)
        case 2: return Double(Int32(truncatingIfNeeded: random.next())) / 1024
        default:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 1.5
        }
    }

    /// Floats with few significant bits, so that JSON text of the `Float` and of the `Double`
    /// the codec stores read back as the same number.
    mutating func float() -> Float { Float(Int16(truncatingIfNeeded: random.next())) / 4 }

    /// Text from several scripts: ASCII, accents, combining marks, CJK, emoji with joiners,
    /// control characters and quotes that JSON must escape.
    mutating func text() -> String {
        let ranges: [ClosedRange<UInt32>] = [0x20...0x7E, 0x00...0x1F, 0xC0...0x17F, 0x300...0x36F, 0x4E00...0x4E80, 0x1F600...0x1F64F, 0x200D...0x200D]
        let count = chance(10) ? 300 + Int(random.next() % 200) : Int(random.next() % 12)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<count {
            let range = ranges[Int(random.next() % UInt64(ranges.count))]
            let value = range.lowerBound + UInt32(random.next() % UInt64(range.count))
            scalars.append(Unicode.Scalar(value)!)
        }
        if chance(10) { scalars.append(contentsOf: "\"\\/".unicodeScalars) }
        return String(scalars)
    }

    mutating func optional<T>(_ make: (inout Values) -> T) -> T? { chance(30) ? nil : make(&self) }

    mutating func array<T>(upTo limit: UInt64 = 6, _ make: (inout Values) -> T) -> [T] {
        (0..<Int(random.next() % (limit + 1))).map { _ in make(&self) }
    }

    mutating func inner() -> Inner {
        Inner(flag: chance(50), ratio: double(), small: integer(), name: optional { $0.text() })
    }

    mutating func shape() -> Shape {
        switch random.next() % 5 {
        case 0: return .none
        case 1: return .point(x: integer(), y: integer())
        case 2: return .label(text())
        case 3: return .nested(optional { $0.inner() })
        default: return .many(array(upTo: 40) { $0.integer() }, tail: optional { $0.integer() })
        }
    }

    mutating func level() -> Level { [Level.low, .middle, .high][Int(random.next() % 3)] }

    mutating func sample() -> Sample {
        Sample(
            int: integer(), i64: integer(), u64: integer(), i8: integer(), i16: integer(), i32: integer(),
            u8: integer(), u16: integer(), u32: integer(), double: double(), float: float(), text: text(),
            optionalText: optional { $0.text() }, inner: optional { $0.inner() }, shapes: array { $0.shape() },
            matrix: array { values in values.optional { $0.array { $0.optional { $0.integer() } } } },
            level: level(), levels: array { $0.optional { $0.level() } },
            data: Data(array(upTo: 64) { $0.integer(UInt8.self) }),
            date: Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: random.next())) / 8),
            id: UUID(uuid: (UInt8(truncatingIfNeeded: random.next()), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                            UInt8(truncatingIfNeeded: random.next()))))
    }

    mutating func unordered() -> Unordered {
        Unordered(
            tags: Set(array(upTo: 20) { $0.text() }),
            byName: Dictionary(array(upTo: 20) { ($0.text(), $0.integer(Int.self)) }, uniquingKeysWith: { first, _ in first }),
            byNumber: Dictionary(array(upTo: 12) { ($0.integer(Int.self), $0.shape()) }, uniquingKeysWith: { first, _ in first }),
            sets: array { $0.array(upTo: 10) { $0.integer(Int.self) } }.map(Set.init),
            byLevel: Dictionary(array { ($0.level(), $0.array { $0.text() }) }, uniquingKeysWith: { first, _ in first }))
    }

    mutating func reading() -> Reading {
        Reading(sensor: integer(), label: optional { $0.text() }, level: double(), tags: array { $0.text() }, ok: chance(50),
                total: integer())
    }
}

@Suite("The binary codec over generated values: every route writes the reference's bytes and reads them back")
struct GeneratedValueCodecTests {
    static let count = 400

    /// The reference: the item tree's bytes, after the codec's marker.
    static func reference<T: Encodable>(_ value: T) throws -> [UInt8] {
        var bytes = [BinaryPayloadCodec.marker]
        BinaryEncoding.write(try BinaryEncoding.item(for: value, codingPath: []), to: &bytes)
        return bytes
    }

    /// The stream's bytes for `value` (after the marker), or `nil` when it handed the value to the tree.
    static func streamed<T: Encodable>(_ value: T, pool: BinaryEncoding.StreamEncoderPool) throws -> [UInt8]? {
        var bytes = [BinaryPayloadCodec.marker]
        return try BinaryEncoding.stream(value, onto: &bytes, encoders: pool) ? bytes : nil
    }

    /// Checks the routes that every type has; returns whether the stream wrote the value itself.
    @discardableResult
    static func checkRoutes<T: Codable & Equatable>(_ value: T, index: Int, pools: [BinaryEncoding.StreamEncoderPool]) throws -> Bool {
        let codec = BinaryPayloadCodec()
        let reference = try reference(value)
        var streamedAll = true
        for pool in pools {
            if let streamed = try streamed(value, pool: pool) {
                #expect(streamed == reference, "value \(index): the stream (reusing containers: \(pool.reusesKeyedContainers)) differs")
            } else {
                streamedAll = false
            }
        }
        #expect(try codec.encode(value) == reference, "value \(index): the codec's encode differs")
        #expect(try codec.decode(T.self, from: reference) == value, "value \(index) does not read back")
        #expect(try reference.withUnsafeBytes { try codec.decode(T.self, fromBuffer: $0) } == value, "value \(index) does not read back in place")
        try checkJSON(value, reference: reference, index: index)
        return streamedAll
    }

    /// The JSON rendering is JSON that `JSONDecoder` reads back as the value (with `Data` as its
    /// bytes, as `Codable` encodes it everywhere but in JSON).
    static func checkJSON<T: Decodable & Equatable>(_ value: T, reference: [UInt8], index: Int) throws {
        let text = try #require(BinaryPayloadCodec.jsonText(reference), "value \(index) has no JSON rendering")
        let decoder = JSONDecoder()
        decoder.dataDecodingStrategy = .custom { decoder in
            var container = try decoder.unkeyedContainer()
            var bytes: [UInt8] = []
            while !container.isAtEnd { bytes.append(try container.decode(UInt8.self)) }
            return Data(bytes)
        }
        let decoded = try? decoder.decode(T.self, from: Data(text.utf8))
        #expect(decoded == value, "value \(index): the JSON rendering does not read back: \(text)")
    }

    @Test("ordered shapes: the stream (containers reused or not), the codec, both decoders and the JSON rendering agree with the tree")
    func orderedShapes() throws {
        var values = Values(random: SeededGenerator(state: 0x5EED_0001))
        let pools = [BinaryEncoding.StreamEncoderPool(reusingKeyedContainers: true), BinaryEncoding.StreamEncoderPool(reusingKeyedContainers: false)]
        #expect(pools[0].reusesKeyedContainers == BinaryEncoding.StreamEncoder.containerIsItsBox)
        #expect(!pools[1].reusesKeyedContainers)
        for index in 0..<Self.count {
            let sample = values.sample()
            #expect(try Self.checkRoutes(sample, index: index, pools: pools), "value \(index): the stream gave up on an ordered value")
            try Self.checkRoutes(sample.shapes, index: index, pools: pools)
            try Self.checkRoutes(sample.inner, index: index, pools: pools)
        }
    }

    @Test("hash-ordered collections: written in one canonical order, whatever their insertion order, and read back")
    func unorderedShapes() throws {
        var values = Values(random: SeededGenerator(state: 0x5EED_0002))
        let pools = [BinaryEncoding.StreamEncoderPool(reusingKeyedContainers: true), BinaryEncoding.StreamEncoderPool(reusingKeyedContainers: false)]
        for index in 0..<Self.count / 2 {
            let value = values.unordered()
            try Self.checkRoutes(value, index: index, pools: pools)
            // The same contents built another way (other capacity, reverse insertion order).
            var rebuilt = Unordered(tags: Set(minimumCapacity: 64), byName: Dictionary(minimumCapacity: 64),
                                    byNumber: [:], sets: value.sets.map { Set($0.reversed()) }, byLevel: [:])
            for tag in value.tags.reversed() { rebuilt.tags.insert(tag) }
            for (key, number) in value.byName.reversed() { rebuilt.byName[key] = number }
            for (key, shape) in value.byNumber.reversed() { rebuilt.byNumber[key] = shape }
            for (key, texts) in value.byLevel.reversed() { rebuilt.byLevel[key] = texts }
            #expect(rebuilt == value)
            #expect(try Self.reference(rebuilt) == Self.reference(value), "value \(index): the order depends on how it was built")
        }
    }

    @Test("a stored form read as a tree writes back exactly the codec's bytes, binary and JSON, for every generated value; edits of its fields are what the encoder writes for the edited type")
    func storedValues() throws {
        var values = Values(random: SeededGenerator(state: 0x5EED_0004))
        for index in 0..<Self.count {
            let sample = values.sample(), unordered = values.unordered()
            for bytes in [try BinaryPayloadCodec().encode(sample), try BinaryPayloadCodec().encode(unordered),
                          try JSONPayloadCodec().encode(sample), try JSONPayloadCodec().encode(unordered)] {
                let (tree, form) = try StoredValue.read(bytes)
                #expect(tree.bytes(form) == bytes, "value \(index): the stored form does not write back as it was")
            }
        }
        // Removing, renaming and adding fields gives the bytes of the type with the change.
        struct Before: Codable { var counter = 7; var items = ["a"]; var nested = Inner(flag: true, ratio: 0.5, small: 1, name: nil) }
        struct After: Codable { var items = ["a"]; var nested = Inner(flag: true, ratio: 0.5, small: 1, name: "x"); var priority = 3; var revision = 7 }
        for codec in [BinaryPayloadCodec() as any PayloadCodec, JSONPayloadCodec()] {
            var (tree, form) = try StoredValue.read(try codec.encode(Before()))
            let renamed = tree.rename(at: ["counter"], to: "revision", form: form)
            let added = tree.insert(try StoredValue.read(try codec.encode(3)).0, at: ["priority"], form: form)
            let nested = tree.insert(try StoredValue.read(try codec.encode("x")).0, at: ["nested", "name"], form: form)
            let missing = tree.insert(.int(1), at: ["missing", "name"], form: form)
            #expect(renamed && added && nested && !missing)
            #expect(tree.bytes(form) == (try codec.encode(After())), "\(codec.name)")
            let removed = tree.remove(at: ["priority"]), again = tree.remove(at: ["priority"])
            #expect(removed && !again)
        }
    }

    @Test("a type's own bytes are its Codable bytes and read back, for every generated value")
    func ownBytes() throws {
        var values = Values(random: SeededGenerator(state: 0x5EED_0003))
        let codec = BinaryPayloadCodec()
        for index in 0..<Self.count {
            let reading = values.reading()
            try Self.checkRoutes(reading, index: index, pools: [BinaryEncoding.StreamEncoderPool()])
            #expect(BinaryPayloadCodec.ownEncoding(of: reading) == (try Self.reference(reading)), "value \(index): own bytes differ")
            #expect(throws: Never.self) { try codec.checkOwnEncoding(of: reading) }
            let read = try Self.reference(reading).withUnsafeBytes { try BinaryPayloadReader.read(Reading.self, from: $0) }
            #expect(read == reading, "value \(index): own bytes do not read back")
        }
    }
}
