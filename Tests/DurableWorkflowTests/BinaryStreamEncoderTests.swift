@testable import WorkflowCodec
import Foundation
import Testing

// Values the stream must encode to exactly the bytes of the item tree (existing logs and digests
// depend on them), and values it must hand back to the tree.

private struct OneInt: Codable { var amount = 7 }
private struct BA: Codable {
    var b = 1
    var a = 2
}

/// Declared out of key order, so the stream must reorder the map.
private struct Unordered: Codable {
    var zeta = "last"
    var alpha = -1
    var mid: Double = 2.5
    var big = UInt64.max
    var none: Int? = nil
    var some: String? = "here"
}

private struct Deep: Codable {
    enum Step: Codable {
        case idle
        case uploading(part: Int, of: Int)
        case failed(String)
    }
    var steps: [Step] = [.idle, .uploading(part: 2, of: 5), .failed("disk full")]
    var nested: [[Int?]] = [[1, nil], [], [3]]
    var inner = Unordered()
    var inners = [OneInt(), OneInt(amount: -300)]
    var byName = Dictionary(uniqueKeysWithValues: (0..<200).map { ("key\($0)", $0) })
    var byNumber = [3: "three", 1: "one", 200: "two hundred"]
    var long = Array(0..<300)
    var data = Data([0, 1, 2, 255])
    var date = Date(timeIntervalSince1970: 1_700_000_000.5)
    var id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    var url = URL(string: "https://example.com/a?b=c")!
    var widths: [Int8] = [Int8.min, 0, Int8.max]
    var float: Float = 3.25
    var text = "héllo, wörld \u{1F600}"
}

/// One key type in several frames at once: a node's children are nodes.
private struct TreeNode: Codable {
    var value: Int
    var children: [TreeNode] = []
}

/// A value whose `encode(to:)` writes no container at all.
private struct Silent: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

/// Writes a key twice (the last value wins) and asks for its keyed container twice.
private struct Repeats: Encodable {
    enum Keys: String, CodingKey { case a, b }
    func encode(to encoder: any Encoder) throws {
        var first = encoder.container(keyedBy: Keys.self)
        try first.encode(1, forKey: .b)
        try first.encode(2, forKey: .a)
        var second = encoder.container(keyedBy: Keys.self)
        try second.encode(3, forKey: .b)
    }
}

/// Wraps a struct in a single value container; a single value container left empty.
private struct Wrapper: Encodable {
    var wrapped = Unordered()
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrapped)
    }
}

private struct EmptySingle: Encodable {
    func encode(to encoder: any Encoder) throws { _ = encoder.singleValueContainer() }
}

/// A nested container filled, then its parent written to again.
private struct NestedThenSibling: Encodable {
    enum Keys: String, CodingKey { case inner, after, list }
    enum InnerKeys: String, CodingKey { case y, x }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var inner = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
        try inner.encode(1, forKey: .y)
        try inner.encode(2, forKey: .x)
        var list = container.nestedUnkeyedContainer(forKey: .list)
        try list.encode("a")
        var sub = list.nestedUnkeyedContainer()
        try sub.encode(true)
        try list.encodeNil()
        try container.encode("after", forKey: .after)
    }
}

// Values the stream cannot follow.

private class Base: Encodable {
    var base = 1
}

private final class Derived: Base {
    var own = 2
    enum Keys: String, CodingKey { case own }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(own, forKey: .own)
        try super.encode(to: container.superEncoder())
    }
}

/// Writes to a nested container after its parent was written to again.
private struct Interleaved: Encodable {
    enum Keys: String, CodingKey { case inner, sibling }
    enum InnerKeys: String, CodingKey { case late }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var inner = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
        try container.encode(1, forKey: .sibling)
        try inner.encode(2, forKey: .late)
    }
}

/// Asks for two kinds of container; the tree keeps the last.
private struct TwoKinds: Encodable {
    enum Keys: String, CodingKey { case a }
    func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: Keys.self)
        try keyed.encode(1, forKey: .a)
        var unkeyed = encoder.unkeyedContainer()
        try unkeyed.encode(2)
    }
}

/// Swallows the error a write throws and goes on.
private struct Swallows: Encodable {
    func encode(to encoder: any Encoder) throws {
        try? Interleaved().encode(to: encoder)
        var container = encoder.singleValueContainer()
        try? container.encode(5)
    }
}

/// Writes the coding path it is encoded at, which the stream does not track.
private struct PathEcho: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(encoder.codingPath.map(\.stringValue).joined(separator: "."))
    }
}

private struct PathAware: Encodable {
    var outer = [PathEcho(), PathEcho()]
    var inner = PathEcho()
}

/// Throws an error naming where it was encoded, as `Codable` conventions ask.
private struct RefusesAtPath: Encodable {
    struct Inner: Encodable {
        func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(0, .init(codingPath: encoder.codingPath, debugDescription: "refused"))
        }
    }
    var a = 1
    var refused = Inner()
}

private struct Failing: Encodable {
    struct Refused: Error {}
    enum Keys: String, CodingKey { case a }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .a)
        throw Refused()
    }
}

@Suite("The binary codec's streaming encoder")
struct BinaryStreamEncoderTests {
    /// One pool for every value: each encoding starts from an encoder the last one left.
    let pool = BinaryEncoding.StreamEncoderPool()

    /// The tree's bytes after a prefix, and whether the stream wrote them itself.
    private func compare<T: Encodable>(_ value: T) throws -> (same: Bool, streamed: Bool) {
        let prefix: [UInt8] = [9, 8, 7]
        var tree = prefix
        BinaryEncoding.write(try BinaryEncoding.item(for: value, codingPath: []), to: &tree)
        var streamedBytes = prefix
        let streamed = try BinaryEncoding.stream(value, onto: &streamedBytes, encoders: pool)
        if !streamed {
            #expect(streamedBytes == prefix, "a stream that gives up leaves the buffer as it was")
            return (true, false)
        }
        return (streamedBytes == tree, true)
    }

    @Test("writes exactly the item tree's bytes for every shape Codable produces, without the tree")
    func sameBytes() throws {
        let values: [(String, any Encodable)] = [
            ("one field", OneInt()), ("reordered keys", Unordered()), ("everything nested", Deep()),
            ("no container", Silent()), ("repeated key and container", Repeats()), ("single value struct", Wrapper()),
            ("empty single value", EmptySingle()), ("nested containers then sibling", NestedThenSibling()),
            ("top-level Int", 5), ("top-level String", "text"), ("top-level Int32", Int32(-9)), ("nil", Int?.none),
            ("empty array", [Int]()), ("long array", Array(repeating: "x", count: 130)),
            ("long map in key order", LongSortedMap()), ("long map out of order", LongSortedMap(reversed: true)),
        ]
        for (name, value) in values {
            let result = try compare(value)
            #expect(result.streamed, "\(name) fell back to the tree")
            #expect(result.same, "\(name) encoded differently")
        }
    }

    @Test("keyed containers kept from earlier values write the same bytes for later ones, of the same type or another")
    func keptContainers() throws {
        #expect(BinaryEncoding.StreamEncoder.containerIsItsBox, "this toolchain's keyed containers are not kept")
        // Each value meets containers kept by the ones before it: the same key type in the same
        // frame, another key type there, an earlier frame than the first kept, and frames past
        // the kept ones (Deep's arrays).
        let values: [(String, any Encodable)] = [
            ("one field in an array (kept for frame 1 first)", [OneInt()]),
            ("one field", OneInt()), ("other keys", BA()), ("one field again", OneInt(amount: -2)),
            ("everything nested", Deep()), ("everything nested again", Deep()), ("reordered keys", Unordered()),
            ("fell back", Interleaved()), ("one field after a fallback", OneInt(amount: 99)),
            ("one key type in nested frames", TreeNode(value: 1, children: [
                TreeNode(value: 2), TreeNode(value: 3, children: [TreeNode(value: 4, children: [TreeNode(value: 5)])]),
            ])),
        ]
        for _ in 0..<2 {
            for (name, value) in values {
                let result = try compare(value)
                #expect(result.same, "\(name) encoded differently")
                #expect(result.streamed == !(value is Interleaved), "\(name) streamed: \(result.streamed)")
            }
        }
    }

    @Test("a pool frees its encoders, though their kept containers point back at them")
    func keptContainersAreFreed() throws {
        weak var kept: BinaryEncoding.StreamEncoder?
        do {
            let pool = BinaryEncoding.StreamEncoderPool()
            var bytes: [UInt8] = []
            #expect(try BinaryEncoding.stream(Deep(), onto: &bytes, encoders: pool))
            let encoder = pool.take()
            kept = encoder
            pool.giveBack(encoder)
        }
        #expect(kept == nil, "the encoder and its containers keep each other alive")
    }

    @Test("hands values it cannot follow to the tree, which writes them as before")
    func fallsBack() throws {
        let values: [(String, any Encodable)] = [
            ("super encoder", Derived()), ("write to a finished nested container", Interleaved()),
            ("two kinds of container", TwoKinds()), ("a value that swallows the stream's error", Swallows()),
            ("a value that writes its coding path", PathAware()),
        ]
        let codec = BinaryPayloadCodec()
        for (name, value) in values {
            #expect(try !compare(value).streamed, "\(name) was streamed")
            var tree: [UInt8] = [BinaryPayloadCodec.marker]
            BinaryEncoding.write(try BinaryEncoding.item(for: value, codingPath: []), to: &tree)
            #expect(try codec.encode(value) == tree, "\(name)")
        }
    }

    @Test("an error thrown by a value propagates and leaves the buffer as it was")
    func errors() throws {
        var bytes: [UInt8] = [1, 2]
        #expect(throws: Failing.Refused.self) { try BinaryPayloadCodec().encode(Failing(), appendingTo: &bytes) }
        #expect(bytes == [1, 2])
    }

    @Test("an error thrown with the coding path names the path the tree knows")
    func errorPath() throws {
        #expect {
            try BinaryPayloadCodec().encode(RefusesAtPath())
        } throws: { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["refused"]
        }
    }

    @Test("the bytes of a small action are fixed: logs and digests written before the stream still verify")
    func frozen() throws {
        // marker, map, 1 entry, "amount" (6 bytes), int, zigzag(7) = 14
        #expect(try BinaryPayloadCodec().encode(OneInt()) == [0xB1, 8, 1, 6] + Array("amount".utf8) + [3, 14])
        // Keys in order: "a" (zigzag(2) = 4) before "b" (zigzag(1) = 2), whatever the declaration order.
        #expect(try BinaryPayloadCodec().encode(BA()) == [0xB1, 8, 2, 1, 0x61, 3, 4, 1, 0x62, 3, 2])
    }
}

/// A keyed container of 150 entries (a count of two bytes), written in key order or reversed.
private struct LongSortedMap: Encodable {
    var reversed = false
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        let indices = reversed ? Array((0..<150).reversed()) : Array(0..<150)
        for index in indices {
            try container.encode(index, forKey: Key(stringValue: "k" + String(1000 + index)))
        }
    }
}
