import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowLMDB

/// A root and a child of different state types, each with its own action type, so that the
/// journal encodes two action types and digests two state types in turn.
struct Ledger: Workflow, Codable, Sendable {
    /// Gives the child a state that is not `Encodable` (a bad-input case).
    var opaqueChild = false

    struct State: Codable, Equatable { var total = 0 }

    struct Deposit: DurableAction {
        typealias WorkflowType = Ledger
        var amount: Int
        func apply(toState state: inout State) -> Never? {
            state.total += amount
            return nil
        }
    }

    struct Rendering: Sendable {
        var total: Int
        var deposit: Sink<Deposit>
        var notes: Notes.Rendering
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<Ledger>) -> Rendering {
        let notes = opaqueChild ? context.render(OpaqueNotes(), key: "notes").notes : context.render(Notes(), key: "notes")
        return Rendering(total: state.total, deposit: context.makeSink(of: Deposit.self), notes: notes)
    }

    static let actions = ActionRegistry(Deposit.self, Notes.Write.self, OpaqueNotes.Write.self)
}

struct Notes: Workflow, Codable, Sendable {
    struct Write: DurableAction {
        typealias WorkflowType = Notes
        var text: String
        func apply(toState state: inout [String]) -> Never? {
            state.append(text)
            return nil
        }
    }

    struct Rendering: Sendable {
        var lines: [String]
        var write: Sink<Write>
    }

    func makeInitialState() -> [String] { [] }
    func render(state: [String], context: RenderContext<Notes>) -> Rendering {
        Rendering(lines: state, write: context.makeSink(of: Write.self))
    }
}

/// A child whose state cannot be encoded, so it cannot be digested or snapshotted.
struct OpaqueNotes: Workflow, Codable, Sendable {
    struct Box { var count = 0 }
    struct Write: DurableAction {
        typealias WorkflowType = OpaqueNotes
        func apply(toState state: inout Box) -> Never? {
            state.count += 1
            return nil
        }
    }

    func makeInitialState() -> Box { Box() }
    func render(state: Box, context: RenderContext<OpaqueNotes>) -> (notes: Notes.Rendering, write: Sink<Write>) {
        (Notes.Rendering(lines: [], write: .recording { _ in }), context.makeSink(of: Write.self))
    }
}

/// A one-node counter whose state is a bare `Int` (digested without building its encoding); its
/// action goes through `Codable` only.
struct IntTally: Workflow, Codable, Sendable {
    struct Add: DurableAction {
        typealias WorkflowType = IntTally
        static let tag = "tally.add"
        var amount: Int
        func apply(toState state: inout Int) -> Never? {
            state += amount
            return nil
        }
    }
    func makeInitialState() -> Int { 0 }
    func render(state: Int, context: RenderContext<IntTally>) -> (Int, Sink<Add>) { (state, context.makeSink(of: Add.self)) }
}

/// The digest as its definition says, computed here independently: FNV-1a (64 bits) over, for
/// each node in path order, its path description and a zero byte, then its state's encoding.
private func expectedDigest(of tree: StateTree) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    func combine<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    }
    for node in tree.nodes.sorted(by: { $0.path.description < $1.path.description }) {
        combine(node.path.description.utf8)
        combine([0])
        combine(node.encodedState)
    }
    return hash
}

@Suite("State digests over a tree of several types (D4)")
struct DigestTests {
    @Test("a digest is FNV-1a over each node's path and encoded state, live and in replay, for struct, array and Int states")
    func digestDefinition() throws {
        let dir = TemporaryDirectory("digest-definition")
        let store = try WorkflowStore.open(path: dir.path)
        let ledger = DurableConfiguration(mode: .strict, actions: Ledger.actions, snapshotEvery: nil)
        let host = try store.start(Ledger(), id: "ledger", configuration: ledger)
        host.rendering.deposit.send(.init(amount: 300))
        host.rendering.notes.write.send(.init(text: "é"))
        host.stop()
        let counter = DurableConfiguration(mode: .strict, actions: ActionRegistry(IntTally.Add.self), snapshotEvery: nil)
        let counterHost = try store.start(IntTally(), id: "int", configuration: counter)
        for amount in [1, -200, 1 << 40] { counterHost.rendering.1.send(.init(amount: amount)) }
        counterHost.stop()

        for (id, tree) in [("ledger", try store.state(of: "ledger", as: Ledger.self, configuration: ledger)),
                           ("int", try store.state(of: "int", as: IntTally.self, configuration: counter))] {
            let expected = expectedDigest(of: tree)
            #expect(tree.digest == expected, "\(id): replay")
            #expect(try store.entries(of: id).last?.digest == expected, "\(id): recorded live")
        }
    }


    @Test("actions of two types to two nodes, digested after each: resume and verify agree with the live tree")
    func twoTypesInTurn() async throws {
        let dir = TemporaryDirectory("digest-types")
        let configuration = DurableConfiguration(mode: .grouped, actions: Ledger.actions, snapshotEvery: 7)
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Ledger(), id: "ledger", configuration: configuration)
        for index in 1...40 {
            if index % 3 == 0 {
                host.rendering.notes.write.send(.init(text: "note \(index)"))
            } else {
                host.rendering.deposit.send(.init(amount: index))
            }
        }
        let done = DispatchSemaphore(value: 0)
        Task.detached { await host.flush(); done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let total = host.rendering.total, lines = host.rendering.notes.lines
        await host.stopAndWait()

        let entries = try store.entries(of: "ledger")
        #expect(entries.count == 41)
        #expect(entries.dropFirst().allSatisfy { $0.digest != nil })
        #expect(Set(entries.dropFirst().map(\.actionTag)) == [Ledger.Deposit.tag, Notes.Write.tag])

        let resumed = try store.resume(id: "ledger", as: Ledger.self, configuration: configuration)
        #expect(resumed.rendering.total == total)
        #expect(resumed.rendering.notes.lines == lines)
        await resumed.stopAndWait()
        let report = try store.verify(id: "ledger", as: Ledger.self, configuration: configuration)
        #expect(report.isConsistent)
    }

    @Test("a node whose state is not Encodable stops the host at its first digest, naming the node")
    func stateNotEncodable() throws {
        let dir = TemporaryDirectory("digest-opaque")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(mode: .strict, actions: Ledger.actions, snapshotEvery: nil)
        let host = try store.start(Ledger(opaqueChild: true), id: "opaque", configuration: configuration)
        host.rendering.deposit.send(.init(amount: 5))
        let error = host.failure as? DurableError
        #expect(error?.kind == .notCodable)
        #expect(error?.nodePath?.contains("OpaqueNotes") == true)
        #expect(error?.instance == "opaque")
        // Nothing uncommitted was published, and the log holds only the props entry.
        #expect(host.rendering.total == 0)
        #expect(try store.entries(of: "opaque").count == 1)
    }
}
