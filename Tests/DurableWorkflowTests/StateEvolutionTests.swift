import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks

// One order workflow, "Evolve.Order", whose state's stored form changes from build to build
// (rule V2; issue 58, point 2): each build is the same workflow over another state type.

/// What every build's state does.
protocol OrderForm: Codable, Equatable, Sendable {
    init()
    mutating func add(_ price: Int)
    var total: Int { get }
}

struct Order<Form: OrderForm>: Workflow, Codable, Sendable {
    static var workflowName: String { "Evolve.Order" }

    struct Add: DurableAction {
        typealias WorkflowType = Order
        static var tag: String { "order.add" }
        var price: Int
        func apply(toState state: inout Form) -> Never? {
            state.add(price)
            return nil
        }
    }

    func makeInitialState() -> Form { Form() }
    func render(state: Form, context: RenderContext<Order>) -> (Form, Sink<Add>) { (state, context.makeSink(of: Add.self)) }

    static func configuration(snapshotEvery: Int? = 4) -> DurableConfiguration {
        DurableConfiguration(actions: ActionRegistry(Add.self), codec: StateEvolutionTests.codec.withLock { $0 }, snapshotEvery: snapshotEvery)
    }
}

/// The first build: items, a total and a counter.
struct FormV1: OrderForm {
    var items: [String] = []
    var total = 0
    var counter = 0
    mutating func add(_ price: Int) {
        items.append("sku-\(price)")
        total += price
        counter += 1
    }
}

/// The second: a new non-optional field with a default.
struct FormV2: OrderForm, VersionedState {
    var items: [String] = []
    var total = 0
    var counter = 0
    var priority = 3
    static let stateVersion = 2
    static let stateRevisions: [StateRevision] = [.added("priority", default: 3, in: 2)]
    mutating func add(_ price: Int) {
        items.append("sku-\(price)")
        total += price
        counter += 1
    }
}

/// The third: `counter` renamed `revision`, the key changed with it.
struct FormV3: OrderForm, VersionedState {
    var items: [String] = []
    var total = 0
    var revision = 0
    var priority = 3
    static let stateVersion = 3
    static let stateRevisions: [StateRevision] = [.added("priority", default: 3, in: 2), .renamed("counter", to: "revision", in: 3)]
    mutating func add(_ price: Int) {
        items.append("sku-\(price)")
        total += price
        revision += 1
    }
}

/// The fourth: `items` dropped (older digests cannot be compared any more).
struct FormV4: OrderForm, VersionedState {
    var total = 0
    var revision = 0
    var priority = 3
    static let stateVersion = 4
    static let stateRevisions: [StateRevision] = [
        .added("priority", default: 3, in: 2), .renamed("counter", to: "revision", in: 3), .removed("items", in: 4),
    ]
    mutating func add(_ price: Int) {
        total += price
        revision += 1
    }
}

/// The fifth: the total kept as text of cents, read from older forms by a migration.
struct FormV5: OrderForm, VersionedState {
    var cents = "0"
    var revision = 0
    var priority = 3
    var total: Int { Int(cents)! / 100 }
    static let stateVersion = 5
    static let stateRevisions: [StateRevision] = [
        .added("priority", default: 3, in: 2), .renamed("counter", to: "revision", in: 3), .removed("items", in: 4),
        .changed(in: 5, "the total became text of cents"),
    ]
    private struct Fourth: Decodable {
        var total: Int
        var revision: Int
        var priority: Int
    }
    static func migrate(from version: Int, decoder: any Decoder) throws -> FormV5? {
        guard version == 4 else { return nil }
        let old = try Fourth(from: decoder)
        return FormV5(cents: String(old.total * 100), revision: old.revision, priority: old.priority)
    }
    mutating func add(_ price: Int) {
        cents = String(Int(cents)! + price * 100)
        revision += 1
    }
}

@Suite("State types that change between builds deploy with digest checks on (V2)", .serialized)
struct StateEvolutionTests {
    /// The codec the tests' instances are written with (JSON for one test).
    static let codec = Lock<any PayloadCodec>(BinaryPayloadCodec())

    /// Instances of the first build in every place a snapshot can fall: "short" (no snapshot),
    /// "edge" (its last entry is a snapshot), "tail" (entries after its snapshot).
    func seed(_ dir: TemporaryDirectory) throws {
        let store = try WorkflowStore.open(path: dir.path)
        for (id, count) in [("short", 2), ("edge", 3), ("tail", 5)] {
            let host = try store.start(Order<FormV1>(), id: id, configuration: Order<FormV1>.configuration())
            for price in 1...count { host.rendering.1.send(.init(price: price * 10)) }
            host.stop()
        }
        #expect(try store.instance(id: "short")?.lastSnapshot == 0)
        #expect(try store.instance(id: "edge")?.lastSnapshot == 4)
        #expect(try store.instance(id: "edge")?.lastSequence == 4)
        #expect(try store.instance(id: "tail")?.lastSequence == 6)
    }

    /// Resumes every seeded instance as `Form`, with digest checks on, adds one more price, stops;
    /// then resumes again and verifies (`unchecked`: whether some recorded digests cannot be
    /// compared): returns each instance's state after the first resume.
    func deploy<Form: OrderForm>(_ dir: TemporaryDirectory, as form: Form.Type, unchecked: Bool = false) throws -> [String: Form] {
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = Order<Form>.configuration()
        var resumed: [String: Form] = [:]
        for id in ["short", "edge", "tail"] {
            let host = try store.resume(id: id, as: Order<Form>.self, configuration: configuration)
            resumed[id] = host.rendering.0
            host.rendering.1.send(.init(price: 1))
            host.stop()
            let again = try store.resume(id: id, as: Order<Form>.self, configuration: configuration)
            #expect(again.rendering.0.total == resumed[id]!.total + 1, "\(id)")
            again.stop()
            let report = try store.verify(id: id, as: Order<Form>.self, configuration: configuration)
            #expect(report.isConsistent, "\(id): \(String(describing: report.problem))")
            #expect(report.unusableSnapshot == nil, "\(id): \(String(describing: report.unusableSnapshot))")
            // Every digest is compared (in its recorded form) unless a change cannot be undone.
            #expect((report.uncheckedDigests > 0) == unchecked, "\(id): \(report.uncheckedDigests) unchecked")
        }
        return resumed
    }

    @Test("a non-optional field added with a default: every instance resumes, its snapshot read with the default, its digests compared without the field; the first new entry notes the new form")
    func addedField() throws {
        let dir = TemporaryDirectory("evolve-added")
        try seed(dir)
        let resumed = try deploy(dir, as: FormV2.self)
        #expect(resumed["short"] == FormV2(items: ["sku-10", "sku-20"], total: 30, counter: 2, priority: 3))
        #expect(resumed["edge"] == FormV2(items: ["sku-10", "sku-20", "sku-30"], total: 60, counter: 3, priority: 3))
        #expect(resumed["tail"]?.total == 150)
        let store = try WorkflowStore.open(path: dir.path)
        let entries = try store.entries(of: "short")
        #expect(entries[3].notes.stateVersions == ["Evolve.Order": 2], "\(entries[3].notes)")
        #expect(entries[..<3].allSatisfy { $0.notes.stateVersions.isEmpty })
    }

    @Test("the same with the JSON codec: its stored forms are edited as text, and the digests match")
    func addedAndRenamedInJSON() throws {
        Self.codec.withLock { $0 = JSONPayloadCodec() }
        defer { Self.codec.withLock { $0 = BinaryPayloadCodec() } }
        let dir = TemporaryDirectory("evolve-json")
        try seed(dir)
        _ = try deploy(dir, as: FormV2.self)
        let resumed = try deploy(dir, as: FormV3.self)
        #expect(resumed["edge"] == FormV3(items: ["sku-10", "sku-20", "sku-30", "sku-1"], total: 61, revision: 4, priority: 3))
        #expect(try WorkflowStore.open(path: dir.path).entries(of: "edge").first?.payload.first == UInt8(ascii: "{"))
    }

    @Test("a renamed field, and the added one before it: instances of both earlier builds resume and verify")
    func renamedField() throws {
        let dir = TemporaryDirectory("evolve-renamed")
        try seed(dir)
        _ = try deploy(dir, as: FormV2.self)
        let resumed = try deploy(dir, as: FormV3.self)
        #expect(resumed["short"] == FormV3(items: ["sku-10", "sku-20", "sku-1"], total: 31, revision: 3, priority: 3))
        #expect(resumed["tail"]?.revision == 6)
    }

    @Test("a removed field: the digests recorded before it are not compared, snapshots are read without it")
    func removedField() throws {
        let dir = TemporaryDirectory("evolve-removed")
        try seed(dir)
        let resumed = try deploy(dir, as: FormV4.self, unchecked: true)
        #expect(resumed["edge"] == FormV4(total: 60, revision: 3, priority: 3))
        #expect(resumed["tail"] == FormV4(total: 150, revision: 5, priority: 3))
    }

    @Test("a changed form: older snapshots go through migrate(from:decoder:), older digests are not compared")
    func changedForm() throws {
        let dir = TemporaryDirectory("evolve-changed")
        try seed(dir)
        _ = try deploy(dir, as: FormV4.self, unchecked: true)
        let resumed = try deploy(dir, as: FormV5.self, unchecked: true)
        #expect(resumed["edge"] == FormV5(cents: "6100", revision: 4, priority: 3))
        #expect(resumed["short"] == FormV5(cents: "3100", revision: 3, priority: 3))
    }

    @Test("a rollback: the first build resumes instances the second wrote (their newer snapshots replayed from the log, the newer digests not compared)")
    func rollback() throws {
        let dir = TemporaryDirectory("evolve-rollback")
        try seed(dir)
        _ = try deploy(dir, as: FormV2.self)
        let store = try WorkflowStore.open(path: dir.path)
        for id in ["short", "edge", "tail"] {
            let host = try store.resume(id: id, as: Order<FormV1>.self, configuration: Order<FormV1>.configuration())
            #expect(host.rendering.0.counter == (id == "short" ? 3 : id == "edge" ? 4 : 6), "\(id)")
            host.stop()
        }
    }

    @Test("digests recorded under the first form still catch a changed apply: a build whose add counts twice fails at the first digest")
    func divergenceUnderOlderForm() throws {
        let dir = TemporaryDirectory("evolve-diverged")
        try seed(dir)
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.nonDeterministic) {
            _ = try store.resume(id: "short", as: Order<Doubling>.self, configuration: Order<Doubling>.configuration())
        }
        #expect(error?.sequence == 2)
    }

    @Test("without a declared revision, a field added with a default still fails typed (nothing resets), and the message names the snapshot's missing field")
    func undeclaredChange() throws {
        let dir = TemporaryDirectory("evolve-undeclared")
        try seed(dir)
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.nonDeterministic) {
            _ = try store.resume(id: "edge", as: Order<Undeclared>.self, configuration: Order<Undeclared>.configuration())
        }
        #expect(error?.detail.contains("no value for the field \"priority\"") == true, "\(String(describing: error))")
    }
}

/// The second build without its declaration.
struct Undeclared: OrderForm {
    var items: [String] = []
    var total = 0
    var counter = 0
    var priority = 3
    mutating func add(_ price: Int) {
        items.append("sku-\(price)")
        total += price
        counter += 1
    }
}

/// The second build with an apply that changed: it counts every price twice.
struct Doubling: OrderForm, VersionedState {
    var items: [String] = []
    var total = 0
    var counter = 0
    var priority = 3
    static let stateVersion = 2
    static let stateRevisions: [StateRevision] = [.added("priority", default: 3, in: 2)]
    mutating func add(_ price: Int) {
        items.append("sku-\(price)")
        total += 2 * price
        counter += 1
    }
}
