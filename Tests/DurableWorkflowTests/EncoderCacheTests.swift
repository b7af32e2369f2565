@testable import DurableWorkflow
import Foundation
import Testing
import Workflow

private struct Pair: Codable, Equatable {
    var left: Int
    var right: String?
}

/// Writes its own bytes, the same as `Codable`'s.
private struct Honest: Codable, Equatable, BinaryPayloadRepresentable {
    var amount: Int
    init(amount: Int) { self.amount = amount }
    func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
        writer.writeMap(count: 1)
        writer.writeKey("amount"); writer.write(amount)
    }
    init(binaryPayload reader: inout BinaryPayloadReader) throws {
        try reader.readMap(count: 1)
        try reader.readKey("amount"); amount = try reader.read(Int.self)
    }
}

/// Writes its own bytes, not `Codable`'s (the key is wrong).
private struct Liar: Codable, Equatable, BinaryPayloadRepresentable {
    var amount: Int
    init(amount: Int) { self.amount = amount }
    func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
        writer.writeMap(count: 1)
        writer.writeKey("amonut"); writer.write(amount)
    }
    init(binaryPayload reader: inout BinaryPayloadReader) throws {
        try reader.readMap(count: 1)
        try reader.readKey("amonut"); amount = try reader.read(Int.self)
    }
}

private struct NotEncodable {}

private struct Counted: Workflow, Codable, Sendable {
    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Counted>) -> Int { state }
    struct Add: DurableAction {
        typealias WorkflowType = Counted
        static let tag = "counted.add"
        static let version = 3
        var amount: Int
        func apply(toState state: inout Int) -> Never? {
            state += amount
            return nil
        }
    }
    struct Local: WorkflowAction {
        typealias WorkflowType = Counted
        func apply(toState state: inout Int) -> Never? { nil }
    }
}

/// `EncoderCache` on its own: each type's encoder, found once through a pointer to a value,
/// writes what the codec writes for that value.
@Suite("EncoderCache: one encoder per type, writing the codec's bytes")
struct EncoderCacheTests {
    /// What the cache's encoder for `value`'s type writes for it.
    static func cached<T>(_ value: T, _ cache: EncoderCache, codec: any PayloadCodec) throws -> [UInt8]? {
        guard let encoding = try cache.stateEncoder(for: value) else { return nil }
        var bytes: [UInt8] = []
        var copy = value
        try withUnsafePointer(to: &copy) { try encoding.encode(UnsafeRawPointer($0), codec: codec, into: &bytes) }
        return bytes
    }

    @Test("primitives, Codable structs and own-bytes types encode as the codec does, with either codec", arguments: ["binary", "json"])
    func sameBytes(codecName: String) throws {
        let codec: any PayloadCodec = codecName == "binary" ? BinaryPayloadCodec() : JSONPayloadCodec()
        let cache = EncoderCache(codec: codec)
        #expect(cache.knownStateEncoder(ObjectIdentifier(Pair.self)) == nil)
        for _ in 0..<2 {  // the second time from the cache
            #expect(try Self.cached(-42, cache, codec: codec) == codec.encode(-42))
            #expect(try Self.cached(Int.max, cache, codec: codec) == codec.encode(Int.max))
            #expect(try Self.cached("héllo", cache, codec: codec) == codec.encode("héllo"))
            #expect(try Self.cached(2.5, cache, codec: codec) == codec.encode(2.5))
            #expect(try Self.cached(true, cache, codec: codec) == codec.encode(true))
            #expect(try Self.cached(Pair(left: 1, right: nil), cache, codec: codec) == codec.encode(Pair(left: 1, right: nil)))
            #expect(try Self.cached(Pair(left: -7, right: "x"), cache, codec: codec) == codec.encode(Pair(left: -7, right: "x")))
            #expect(try Self.cached(Honest(amount: 9), cache, codec: codec) == codec.encode(Honest(amount: 9)))
            #expect(try Self.cached(NotEncodable(), cache, codec: codec) == nil)
        }
        #expect(cache.knownStateEncoder(ObjectIdentifier(Pair.self)) != nil)
    }

    @Test("an own-bytes type whose bytes differ from Codable's is refused, every time it is asked for")
    func mismatchRefused() throws {
        let cache = EncoderCache(codec: BinaryPayloadCodec())
        for _ in 0..<2 {
            #expect(throws: BinaryPayloadMismatch.self) { try cache.stateEncoder(for: Liar(amount: 1)) }
            #expect(cache.knownStateEncoder(ObjectIdentifier(Liar.self)) == nil)
        }
        // With another codec the type goes through Codable, and nothing is checked.
        let json = JSONPayloadCodec()
        #expect(try Self.cached(Liar(amount: 1), EncoderCache(codec: json), codec: json) == json.encode(Liar(amount: 1)))
    }

    @Test("an action's encoder carries its tag and version; an action that is not durable has none")
    func actions() throws {
        let cache = EncoderCache(codec: BinaryPayloadCodec())
        let encoder = try #require(try cache.actionEncoder(for: Counted.Add(amount: 5)))
        #expect(encoder.tag == "counted.add" && encoder.version == 3)
        #expect(try cache.actionEncoder(for: Counted.Add(amount: 6)) === encoder, "found once per type")
        var action = Counted.Add(amount: 5)
        var bytes: [UInt8] = []
        try withUnsafePointer(to: &action) { try encoder.encoding.encode(UnsafeRawPointer($0), codec: BinaryPayloadCodec(), into: &bytes) }
        #expect(bytes == (try BinaryPayloadCodec().encode(Counted.Add(amount: 5))))
        #expect(try cache.actionEncoder(for: Counted.Local()) == nil)
    }
}
