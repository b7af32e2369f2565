import DurableWorkflow
import Synchronization
import TestSupport
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks

// An order workflow, "Markers.Order", built twice: the second build adds a fee to `pay` and
// stops declaring the charge worker, both behind version markers (rule V1; issue 58, point 3).

/// How a build prices a payment and whether it charges through a worker.
protocol PricingBuild: Sendable {
    static func pay(_ price: Int, context: ApplyContext<MarkedOrder<Self>>) -> Int
    static func declaresCharge(_ context: RenderContext<MarkedOrder<Self>>) -> Bool
}

/// The first build: no markers at all.
enum PricingV1: PricingBuild {
    static func pay(_ price: Int, context: ApplyContext<MarkedOrder<PricingV1>>) -> Int { price }
    static func declaresCharge(_ context: RenderContext<MarkedOrder<PricingV1>>) -> Bool { true }
}

/// The second build: a fee of 250 from version 2 of "fee"; the charge worker only in version 1
/// of "charge-worker".
enum PricingV2: PricingBuild {
    static func pay(_ price: Int, context: ApplyContext<MarkedOrder<PricingV2>>) -> Int {
        context.version("fee") >= 2 ? price + 250 : price
    }
    static func declaresCharge(_ context: RenderContext<MarkedOrder<PricingV2>>) -> Bool { context.version("charge-worker") == 1 }
    static let markers: [String: ClosedRange<Int>] = ["fee": 1...2, "charge-worker": 1...2]
}

struct MarkedOrder<Build: PricingBuild>: Workflow, Codable, Sendable {
    static var workflowName: String { "Markers.Order" }

    struct State: Codable, Equatable, Sendable {
        var total = 0
        var paid = false
        var code: String?
    }

    struct Pay: DurableAction {
        typealias WorkflowType = MarkedOrder
        static var tag: String { "order.pay" }
        var price: Int
        func apply(toState state: inout State, context: ApplyContext<MarkedOrder>) -> Never? {
            state.total = Build.pay(price, context: context)
            state.paid = true
            state.code = context.codeVersion
            return nil
        }
    }

    /// Stands for a call to the bank; never finishes.
    struct Charge: Worker {
        func run() -> AsyncStream<Pay> { AsyncStream { _ in } }
    }

    func makeInitialState() -> State { State() }

    func render(state: State, context: RenderContext<MarkedOrder>) -> (State, Sink<Pay>) {
        if state.paid, Build.declaresCharge(context) { context.run(Charge(), key: "charge") }
        return (state, context.makeSink(of: Pay.self))
    }

    static func configuration(markers: [String: ClosedRange<Int>] = [:], codeVersion: String? = nil) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: .processCrashSafe, actions: ActionRegistry(Pay.self), snapshotEvery: 7)
        configuration.versionMarkers = markers
        configuration.codeVersion = codeVersion
        return configuration
    }
}

@Suite("Version markers: old instances replay their old branch, new ones take the new (V1)")
struct VersionMarkerTests {
    @Test("1,000 instances of the first build, half paid; the second build with a fee behind a marker resumes all of them with digest checks on: those paid before keep their total, the others and new instances pay the fee, and replay of both matches the live state")
    func feeBehindAMarker() throws {
        let dir = TemporaryDirectory("markers-fee")
        let count = 1000
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for index in 0..<count {
                let host = try store.start(MarkedOrder<PricingV1>(), id: "o-\(index)", configuration: MarkedOrder<PricingV1>.configuration())
                if index % 2 == 0 { host.rendering.1.send(.init(price: 100)) }
                host.stop()
            }
            try store.close()
        }
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = MarkedOrder<PricingV2>.configuration(markers: PricingV2.markers, codeVersion: "v2")
        let results = try store.resumeAll(MarkedOrder<PricingV2>.self, configuration: configuration)
        #expect(results.count == count)
        #expect(results.allSatisfy { $0.error == nil }, "\(results.compactMap(\.error).prefix(3))")
        var live: [String: MarkedOrder<PricingV2>.State] = [:]
        for result in results {
            let host = try #require(result.host)
            let index = Int(result.id.dropFirst(2))!
            if index % 2 == 0 {
                // Paid under the first build: its replayed pay took the branch before the marker.
                #expect(host.rendering.0.total == 100, "\(result.id)")
            } else {
                host.rendering.1.send(.init(price: 100))
                #expect(host.rendering.0.total == 350, "\(result.id)")
            }
            live[result.id] = host.rendering.0
            host.stop()
        }
        let fresh = try store.start(MarkedOrder<PricingV2>(), id: "new", configuration: configuration)
        fresh.rendering.1.send(.init(price: 100))
        #expect(fresh.rendering.0 == .init(total: 350, paid: true, code: "v2"))
        live["new"] = fresh.rendering.0
        fresh.stop()
        // The marker is logged where an instance fixed it: with the entry of a pay made live.
        #expect(try store.entries(of: "o-1").last?.notes.versionMarkers == ["fee": 2, "charge-worker": 2])
        // No marker of the build's (only the engine's own naming marker, `$names`).
        #expect(try store.entries(of: "o-0").allSatisfy { $0.notes.versionMarkers.filter { !$0.key.hasPrefix("$") }.isEmpty })
        #expect(try store.entries(of: "new").first?.notes.versionMarkers == ["fee": 2, "charge-worker": 2, "$names": 2])
        // Replayed again, from the first entry and from snapshots: the live states, no divergence.
        for (id, state) in live {
            let report = try store.verify(id: id, as: MarkedOrder<PricingV2>.self, configuration: configuration)
            #expect(report.isConsistent, "\(id): \(String(describing: report.problem))")
            let tree = try store.state(of: id, as: MarkedOrder<PricingV2>.self, configuration: configuration)
            #expect(try tree.rootState(as: MarkedOrder<PricingV2>.State.self) == state, "\(id)")
        }
    }

    @Test("a worker the second build declares only for instances that had it: an old instance in flight keeps waiting on it, a new one never starts it")
    func workerBehindAMarker() throws {
        let dir = TemporaryDirectory("markers-worker")
        let store = try WorkflowStore.open(path: dir.path)
        let old = try store.start(MarkedOrder<PricingV1>(), id: "old", configuration: MarkedOrder<PricingV1>.configuration())
        old.rendering.1.send(.init(price: 100))
        old.stop()
        let configuration = MarkedOrder<PricingV2>.configuration(markers: PricingV2.markers)
        let resumed = try store.resume(id: "old", as: MarkedOrder<PricingV2>.self, configuration: configuration)
        resumed.stop()
        #expect(try store.state(of: "old", as: MarkedOrder<PricingV2>.self, configuration: configuration).waits.map(\.key) == ["charge"])
        let fresh = try store.start(MarkedOrder<PricingV2>(), id: "fresh", configuration: configuration)
        fresh.rendering.1.send(.init(price: 100))
        fresh.stop()
        #expect(try store.state(of: "fresh", as: MarkedOrder<PricingV2>.self, configuration: configuration).waits.isEmpty)
    }

    @Test("a build that drops a version an instance still needs refuses it at resume with unsupportedVersion naming the marker and leaves it running; instances that fixed a supported version resume")
    func droppedVersionIsRefused() throws {
        let dir = TemporaryDirectory("markers-dropped")
        let store = try WorkflowStore.open(path: dir.path)
        let old = try store.start(MarkedOrder<PricingV1>(), id: "old", configuration: MarkedOrder<PricingV1>.configuration())
        old.rendering.1.send(.init(price: 100))
        old.stop()
        let fresh = try store.start(MarkedOrder<PricingV2>(), id: "fresh", configuration: MarkedOrder<PricingV2>.configuration(markers: PricingV2.markers))
        fresh.rendering.1.send(.init(price: 100))
        fresh.stop()
        // The third build supports only the fee.
        let third = MarkedOrder<PricingV2>.configuration(markers: ["fee": 2...2, "charge-worker": 1...2])
        let error = expectDurableError(.unsupportedVersion) { _ = try store.resume(id: "old", as: MarkedOrder<PricingV2>.self, configuration: third) }
        #expect(error?.description.contains("version 1 of the version marker \"fee\"") == true, "\(String(describing: error))")
        #expect(error?.instance == "old")
        #expect(try store.instance(id: "old")?.status == .running)
        let results = try store.resumeAll(MarkedOrder<PricingV2>.self, configuration: third)
        #expect(results.first { $0.id == "old" }?.error?.kind == .unsupportedVersion)
        #expect(results.first { $0.id == "fresh" }?.host?.rendering.0.total == 350)
        for result in results { result.host?.stop() }
        #expect(try store.instance(id: "old")?.status == .running)
        // A rollback to a build that supports only version 1: refused before any replay.
        let rollback = MarkedOrder<PricingV2>.configuration(markers: ["fee": 1...1, "charge-worker": 1...2])
        let refused = expectDurableError(.unsupportedVersion) {
            _ = try store.resume(id: "fresh", as: MarkedOrder<PricingV2>.self, configuration: rollback)
        }
        #expect(refused?.sequence == 1)
    }

    @Test("a marker no configuration declares is a programmer error naming it; in memory a declared marker is its newest version; ApplyContext takes markers for tests")
    func undeclaredAndInMemory() {
        let reported = Lock<[String]>([])
        var configuration = HostConfiguration(programmerErrors: .report { message in reported.withLock { $0.append(message) } })
        let host = WorkflowHost(workflow: MarkedOrder<PricingV2>(), configuration: configuration)
        host.rendering.1.send(.init(price: 100))
        #expect(reported.withLock { $0.contains { $0.contains("\"fee\" is not declared") } })
        configuration.versionMarkers = PricingV2.markers
        let declared = WorkflowHost(workflow: MarkedOrder<PricingV2>(), configuration: configuration)
        declared.rendering.1.send(.init(price: 100))
        #expect(declared.rendering.0.total == 350)
        var state = MarkedOrder<PricingV2>.State()
        _ = MarkedOrder<PricingV2>.Pay(price: 100).apply(
            toState: &state, context: ApplyContext(props: MarkedOrder<PricingV2>(), versionMarkers: ["fee": 1], codeVersion: "v1"))
        #expect(state == .init(total: 100, paid: true, code: "v1"))
    }
}
