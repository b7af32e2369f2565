import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB

/// A value using every shape `Codable` produces: scalars of every width, optionals, nesting,
/// arrays, dictionaries with string and integer keys, enums with payloads, Foundation types.
private struct Everything: Codable, Equatable {
    enum Step: Codable, Equatable {
        case idle
        case uploading(part: Int, of: Int)
        case failed(String)
    }

    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String]
    }

    var int = -42
    var int8 = Int8.min
    var int16 = Int16.max
    var int32 = Int32.min
    var int64 = Int64.min
    var uint = UInt.max
    var uint8 = UInt8.max
    var uint16 = UInt16.max
    var uint32 = UInt32.max
    var uint64 = UInt64.max
    var double = -1234.5678
    var float: Float = 3.25
    var flag = true
    var text = "héllo, wörld \u{1F600} \"quoted\"\n"
    var empty = ""
    var missing: Int?
    var present: Int? = 7
    var inner = Inner(name: "x", tags: ["a", "", "c"])
    var inners = [Inner(name: "y", tags: []), Inner(name: "z", tags: ["q"])]
    var byName = ["b": 2, "a": 1, "c": 3]
    var byNumber = [3: "three", 1: "one"]
    var steps: [Step] = [.idle, .uploading(part: 2, of: 5), .failed("disk full")]
    var nested: [[Int?]] = [[1, nil], [], [3]]
    var data = Data([0, 1, 2, 255])
    var date = Date(timeIntervalSince1970: 1_700_000_000.5)
    var id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
}

private struct Version1: Codable { var amount: Int }
private struct Version2: Codable, Equatable {
    var amount: Int
    var note: String?
}

@Suite("The binary payload codec")
struct BinaryPayloadCodecTests {
    let codec = BinaryPayloadCodec()

    @Test("every Codable shape round-trips exactly")
    func roundTrip() throws {
        let value = Everything()
        let bytes = try codec.encode(value)
        #expect(bytes.first == BinaryPayloadCodec.marker)
        #expect(try codec.decode(Everything.self, from: bytes) == value)
        #expect(try codec.decode([Int].self, from: codec.encode([Int]())) == [])
        #expect(try codec.decode(String.self, from: codec.encode("top level")) == "top level")
        #expect(try codec.decode(Int?.self, from: codec.encode(Int?.none)) == nil)
    }

    @Test("encoding onto a buffer appends exactly the value's encoding, for the binary and the JSON codec")
    func appendingEncoding() throws {
        let codecs: [any PayloadCodec] = [codec, JSONPayloadCodec()]
        for codec in codecs {
            var buffer: [UInt8] = [7, 7, 7]
            try codec.encode(Everything(), appendingTo: &buffer)
            try codec.encode(12, appendingTo: &buffer)
            #expect(buffer == [7, 7, 7] + (try codec.encode(Everything())) + (try codec.encode(12)), "\(codec.name)")
        }
    }

    @Test("equal values encode to equal bytes, whatever order their dictionary keys were inserted in")
    func deterministic() throws {
        var forward: [String: Int] = [:], backward: [String: Int] = [:]
        for index in 0..<200 { forward["key\(index)"] = index }
        for index in (0..<200).reversed() { backward["key\(index)"] = index }
        #expect(try codec.encode(forward) == codec.encode(backward))
        #expect(try codec.encode(Everything()) == codec.encode(Everything()))
        #expect(try codec.decode([String: Int].self, from: codec.encode(forward)) == forward)
    }

    @Test("an added optional field decodes as nil from old bytes; an unknown field is ignored")
    func schemaEvolution() throws {
        let old = try codec.encode(Version1(amount: 3))
        #expect(try codec.decode(Version2.self, from: old) == Version2(amount: 3, note: nil))
        let new = try codec.encode(Version2(amount: 4, note: "n"))
        #expect(try codec.decode(Version1.self, from: new).amount == 4)
        #expect(try codec.decode(Int64.self, from: codec.encode(Int8(-5))) == -5)  // widening
    }

    @Test("bad bytes throw DecodingError and never crash: no marker, wrong types, overflow, truncations, flipped bytes")
    func badInput() throws {
        #expect(throws: DecodingError.self) { try codec.decode(Int.self, from: Array(#"{"amount":1}"#.utf8)) }
        #expect(throws: DecodingError.self) { try codec.decode(Int.self, from: []) }
        #expect(throws: DecodingError.self) { try codec.decode(String.self, from: codec.encode(5)) }
        #expect(throws: DecodingError.self) { try codec.decode(Int8.self, from: codec.encode(300)) }
        #expect(throws: DecodingError.self) { try codec.decode(UInt.self, from: codec.encode(-1)) }
        #expect(throws: DecodingError.self) { try codec.decode(Version1.self, from: codec.encode(["other": 1])) }
        let valid = try codec.encode(Everything())
        for length in 0..<valid.count {
            #expect(throws: (any Error).self) { try codec.decode(Everything.self, from: Array(valid[..<length])) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var flipped = valid
            flipped[Int.random(in: 1..<valid.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            _ = try? codec.decode(Everything.self, from: flipped)  // throws or decodes; must not crash
            _ = BinaryPayloadCodec.jsonText(flipped)
        }
    }

    @Test("jsonText shows an encoding as the JSON a sorted-keys JSONEncoder writes")
    func jsonText() throws {
        struct Sample: Codable {
            var b = [1, -2]
            var a = "x\"y"
            var c: Bool? = nil
            var d = ["k": 1.5]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = String(decoding: try encoder.encode(Sample()), as: UTF8.self)
        #expect(BinaryPayloadCodec.jsonText(try codec.encode(Sample())) == expected)
        #expect(BinaryPayloadCodec.jsonText(Array("{}".utf8)) == nil)
    }
}

@Suite("Codecs recorded per instance")
struct InstanceCodecTests {
    /// Starts counter `id` with the JSON codec, applies `amounts`, and stops it.
    private func startJSONCounter(in store: WorkflowStore, id: String, amounts: [Int]) throws {
        var json = counterConfiguration()
        json.codec = JSONPayloadCodec()
        let host = try store.start(DurableCounter(), id: id, configuration: json)
        for amount in amounts { host.rendering.sink.send(.init(amount: amount)) }
        host.stop()
    }

    @Test("an instance started with JSON is resumed and read with JSON by a default configuration, and keeps writing JSON")
    func recordedCodecWins() throws {
        let dir = TemporaryDirectory("codec-recorded")
        let store = try WorkflowStore.open(path: dir.path)
        try startJSONCounter(in: store, id: "json", amounts: [2])
        let resumed = try store.resume(id: "json", as: DurableCounter.self, configuration: counterConfiguration())
        #expect(resumed.rendering.state.count == 2)
        resumed.rendering.sink.send(.init(amount: 3))
        resumed.stop()
        let entries = try store.entries(of: "json")
        #expect(entries.dropFirst().allSatisfy { String(decoding: $0.payload, as: UTF8.self).hasPrefix("{") })
        #expect(try store.state(of: "json", as: DurableCounter.self, configuration: counterConfiguration())
            .rootState(as: DurableCounter.State.self).count == 5)
        #expect(try store.verify(id: "json", as: DurableCounter.self, configuration: counterConfiguration()).isConsistent)
    }

    @Test("choosing a codec other than the instance's is a typed error naming both")
    func mismatch() throws {
        let dir = TemporaryDirectory("codec-mismatch")
        let store = try WorkflowStore.open(path: dir.path)
        try store.start(DurableCounter(), id: "binary", configuration: counterConfiguration()).stop()
        var json = counterConfiguration()
        json.codec = JSONPayloadCodec()
        let error = expectDurableError(.codecMismatch) { _ = try store.resume(id: "binary", as: DurableCounter.self, configuration: json) }
        #expect(error?.description.contains("binary") == true)
        #expect(error?.description.contains("json") == true)
    }

    @Test("a forked or imported log keeps the codec its entries were written with")
    func forkKeepsCodec() throws {
        let dir = TemporaryDirectory("codec-fork")
        let store = try WorkflowStore.open(path: dir.path)
        try startJSONCounter(in: store, id: "source", amounts: [1, 2, 3])
        try store.fork(id: "source", at: 3, as: "forked")
        try store.importInstance(id: "imported", workflowType: String(reflecting: DurableCounter.self), status: .running,
                                 created: .now(), entries: try store.entries(of: "source"))
        for id in ["forked", "imported"] {
            let resumed = try store.resume(id: id, as: DurableCounter.self, configuration: counterConfiguration())
            #expect(resumed.rendering.state.count == (id == "forked" ? 3 : 6))
            resumed.stop()
        }
    }
}
