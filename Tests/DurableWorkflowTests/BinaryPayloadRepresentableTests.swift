import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowLMDB

/// A ledger whose action and state write their own bytes: every shape the writer documents.
private struct OwnLedger: Workflow, Codable, Sendable {
    struct State: Codable, Equatable, Sendable, BinaryPayloadRepresentable {
        var total = 0
        var last: String?

        init() {}

        func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
            writer.writeMap(count: last == nil ? 1 : 2)
            if let last { writer.writeKey("last"); writer.write(last) }
            writer.writeKey("total"); writer.write(total)
        }

        init(binaryPayload reader: inout BinaryPayloadReader) throws {
            let count = try reader.readMap()
            if count == 2 {
                try reader.readKey("last"); last = try reader.read(String.self)
            }
            try reader.readKey("total"); total = try reader.read(Int.self)
        }
    }

    enum Kind: Codable, Equatable, BinaryPayloadRepresentable {
        case deposit
        case transfer(to: String)

        func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
            writer.writeMap(count: 1)
            switch self {
            case .deposit:
                writer.writeKey("deposit"); writer.writeMap(count: 0)
            case .transfer(let to):
                writer.writeKey("transfer"); writer.writeMap(count: 1)
                writer.writeKey("to"); writer.write(to)
            }
        }

        init(binaryPayload reader: inout BinaryPayloadReader) throws {
            try reader.readMap(count: 1)
            do {
                try reader.readKey("deposit")
                try reader.readMap(count: 0)
                self = .deposit
            } catch {
                try reader.readKey("transfer")
                try reader.readMap(count: 1)
                try reader.readKey("to")
                self = .transfer(to: try reader.read(String.self))
            }
        }
    }

    struct Post: DurableAction, Equatable, BinaryPayloadRepresentable {
        typealias WorkflowType = OwnLedger
        static let tag = "ledger.post"
        var amount: Int
        var memo: String
        var kind: Kind
        var rate: Double
        var flags: [Bool]
        var id: UInt64

        init(amount: Int, memo: String, kind: Kind = .deposit, rate: Double = 0.5, flags: [Bool] = [true, false], id: UInt64 = .max) {
            (self.amount, self.memo, self.kind, self.rate, self.flags, self.id) = (amount, memo, kind, rate, flags, id)
        }

        func apply(toState state: inout State) -> Never? {
            state.total += amount
            state.last = memo.isEmpty ? nil : memo
            return nil
        }

        func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
            writer.writeMap(count: 6)
            writer.writeKey("amount"); writer.write(amount)
            writer.writeKey("flags"); writer.writeArray(count: flags.count)
            for flag in flags { writer.write(flag) }
            writer.writeKey("id"); writer.write(id)
            writer.writeKey("kind"); writer.write(kind)
            writer.writeKey("memo"); writer.write(memo)
            writer.writeKey("rate"); writer.write(rate)
        }

        init(binaryPayload reader: inout BinaryPayloadReader) throws {
            try reader.readMap(count: 6)
            try reader.readKey("amount"); amount = try reader.read(Int.self)
            try reader.readKey("flags")
            flags = try (0..<reader.readArray()).map { _ in try reader.read(Bool.self) }
            try reader.readKey("id"); id = try reader.read(UInt64.self)
            try reader.readKey("kind"); kind = try reader.read(Kind.self)
            try reader.readKey("memo"); memo = try reader.read(String.self)
            try reader.readKey("rate"); rate = try reader.read(Double.self)
        }
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<OwnLedger>) -> (state: State, sink: Sink<Post>) {
        (state, context.makeSink(of: Post.self))
    }

    static var configuration: DurableConfiguration {
        DurableConfiguration(mode: .strict, actions: ActionRegistry(Post.self), snapshotEvery: nil)
    }
}

/// An action whose own bytes put its keys out of order: not what `Codable` writes.
private struct Unsorted: Workflow, Codable, Sendable {
    struct Set2: DurableAction, BinaryPayloadRepresentable {
        typealias WorkflowType = Unsorted
        var b = 2
        var a = 1
        init() {}
        func apply(toState state: inout Int) -> Never? {
            state = a + b
            return nil
        }
        func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
            writer.writeMap(count: 2)
            writer.writeKey("b"); writer.write(b)
            writer.writeKey("a"); writer.write(a)
        }
        init(binaryPayload reader: inout BinaryPayloadReader) throws {
            try reader.readMap(count: 2)
            try reader.readKey("b"); b = try reader.read(Int.self)
            try reader.readKey("a"); a = try reader.read(Int.self)
        }
    }

    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<Unsorted>) -> (Int, Sink<Set2>) { (state, context.makeSink(of: Set2.self)) }
}

/// Today's form of `IntTally.Add` (same tag): an optional note was added, and its own reader
/// only reads today's bytes.
private struct NotedAdd: DurableAction, Equatable, BinaryPayloadRepresentable {
    typealias WorkflowType = IntTally
    static let tag = "tally.add"
    var amount: Int
    var note: String?
    func apply(toState state: inout Int) -> Never? {
        state += amount
        return nil
    }
    func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
        writer.writeMap(count: note == nil ? 1 : 2)
        writer.writeKey("amount"); writer.write(amount)
        if let note { writer.writeKey("note"); writer.write(note) }
    }
    init(amount: Int, note: String?) { (self.amount, self.note) = (amount, note) }
    init(binaryPayload reader: inout BinaryPayloadReader) throws {
        try reader.readMap(count: 2)
        try reader.readKey("amount"); amount = try reader.read(Int.self)
        try reader.readKey("note"); note = try reader.read(String.self)
    }
}

@Suite("Types that write their own binary payloads")
struct BinaryPayloadRepresentableTests {
    let codec = BinaryPayloadCodec()

    @Test("own bytes equal Codable's for every shape the writer documents, and read back to the same value")
    func ownBytesMatchCodable() throws {
        let posts = [
            OwnLedger.Post(amount: -3, memo: "rent"),
            OwnLedger.Post(amount: 1 << 40, memo: "", kind: .transfer(to: "bob"), rate: -0.125, flags: [], id: 0),
        ]
        for post in posts {
            try codec.checkOwnEncoding(of: post)
            var bytes: [UInt8] = []
            try codec.encode(post, appendingTo: &bytes)
            #expect(try codec.decode(OwnLedger.Post.self, from: bytes) == post)
        }
        var state = OwnLedger.State()
        try codec.checkOwnEncoding(of: state)
        state.last = "x"
        try codec.checkOwnEncoding(of: state)
    }

    @Test("a mismatch names the type and shows both encodings")
    func mismatchIsReported() throws {
        let error = #expect(throws: BinaryPayloadMismatch.self) { try codec.checkOwnEncoding(of: Unsorted.Set2()) }
        #expect(error?.type.contains("Set2") == true)
        #expect(error?.detail == "the two encodings differ")
        #expect(error?.codableBytes != error?.ownBytes)
        // A reader that does not read what its writer wrote is caught too.
        let noted = NotedAdd(amount: 1, note: nil)
        let unreadable = #expect(throws: BinaryPayloadMismatch.self) { try codec.checkOwnEncoding(of: noted) }
        #expect(unreadable?.detail.contains("could not read the bytes back") == true)
    }

    @Test("a durable host logs own bytes that replay, verify and time travel read, with digests that match")
    func durableRoundTrip() throws {
        let dir = TemporaryDirectory("own-bytes")
        let store = try WorkflowStore.open(path: dir.path)
        let posts = [
            OwnLedger.Post(amount: 5, memo: "a"),
            OwnLedger.Post(amount: 7, memo: "", kind: .transfer(to: "carol")),
            OwnLedger.Post(amount: -2, memo: "fee", flags: [false]),
        ]
        let host = try store.start(OwnLedger(), id: "ledger", configuration: OwnLedger.configuration)
        for post in posts { host.rendering.sink.send(post) }
        #expect(host.failure == nil)
        host.stop()

        let entries = try store.entries(of: "ledger").dropFirst()
        #expect(entries.map(\.payload) == (try posts.map { try codec.encode($0) }))
        #expect(entries.allSatisfy { $0.digest != nil })
        let resumed = try store.resume(id: "ledger", as: OwnLedger.self, configuration: OwnLedger.configuration)
        #expect(resumed.rendering.state.total == 10)
        #expect(resumed.rendering.state.last == "fee")
        resumed.stop()
        #expect(try store.verify(id: "ledger", as: OwnLedger.self, configuration: OwnLedger.configuration).isConsistent)
        let atSecond = try store.state(of: "ledger", as: OwnLedger.self, at: 3, configuration: OwnLedger.configuration)
        #expect(try atSecond.rootState(as: OwnLedger.State.self).total == 12)
    }

    @Test("with the JSON codec the same types go through Codable")
    func otherCodecs() throws {
        let dir = TemporaryDirectory("own-bytes-json")
        let store = try WorkflowStore.open(path: dir.path)
        var configuration = OwnLedger.configuration
        configuration.codec = JSONPayloadCodec()
        let host = try store.start(OwnLedger(), id: "json", configuration: configuration)
        host.rendering.sink.send(OwnLedger.Post(amount: 4, memo: "j"))
        host.stop()
        let payload = try #require(try store.entries(of: "json").last?.payload)
        #expect(String(decoding: payload, as: UTF8.self).hasPrefix("{"))
        let resumed = try store.resume(id: "json", as: OwnLedger.self, configuration: configuration)
        #expect(resumed.rendering.state.total == 4)
        resumed.stop()
    }

    @Test("an action whose own bytes differ from Codable's stops the host with payloadMismatch before anything is logged")
    func mismatchStopsHost() throws {
        let dir = TemporaryDirectory("own-bytes-bad")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Unsorted(), id: "unsorted", configuration: DurableConfiguration(actions: ActionRegistry(Unsorted.Set2.self)))
        host.rendering.1.send(Unsorted.Set2())
        let error = host.failure as? DurableError
        #expect(error?.kind == .payloadMismatch)
        #expect(error?.instance == "unsorted")
        #expect(error?.description.contains("Set2") == true)
        #expect(host.rendering.0 == 0)
        #expect(try store.entries(of: "unsorted").count == 1)
    }

    @Test("replay reads bytes a type's own reader rejects (an older form) through Codable")
    func olderBytesFallBackToCodable() throws {
        let dir = TemporaryDirectory("own-bytes-old")
        let store = try WorkflowStore.open(path: dir.path)
        let old = try store.start(IntTally(), id: "tally", configuration: DurableConfiguration(actions: ActionRegistry(IntTally.Add.self)))
        old.rendering.1.send(IntTally.Add(amount: 3))
        old.rendering.1.send(IntTally.Add(amount: 4))
        old.stop()
        // Today's registry decodes the tag as NotedAdd, whose own reader wants a note.
        let today = DurableConfiguration(actions: ActionRegistry(NotedAdd.self), digests: .off)
        #expect(try store.state(of: "tally", as: IntTally.self, configuration: today).rootState(as: Int.self) == 7)
    }
}
