import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowTesting

/// The replay gate over a store the first build of the order service wrote, one instance per
/// stage, run with each later build (rule V3; issue 58, point 4).
@Suite("The replay gate classifies every instance against a new build, with its divergence and render diff (V3)", .serialized)
struct ReplayGateTests {
    typealias Outcome = ReplayGateResult.Outcome

    /// A store of the first build's instances, one per stage, all stopped.
    static func seeded(_ name: String) async throws -> TemporaryDirectory {
        let dir = TemporaryDirectory(name)
        let store = try WorkflowStore.open(path: dir.path)
        for host in try await UpgradeOrder<BuildV1>.seed(store) { await host.stopAndWait() }
        try store.close()
        return dir
    }

    /// Each stage's result under `Build`.
    static func gate<Build: UpgradeBuild>(_ build: Build.Type, _ store: WorkflowStore) throws -> [UpgradeStage: ReplayGateResult] {
        var replayer = WorkflowReplayer()
        replayer.register(UpgradeOrder<Build>.self, configuration: UpgradeOrder<Build>.configuration())
        let report = try replayer.check(store)
        #expect(report.results.count == UpgradeStage.allCases.count)
        return Dictionary(uniqueKeysWithValues: report.results.map { result in (UpgradeStage(rawValue: String(result.instance.dropFirst(6)))!, result) })
    }

    /// `expected` for the stages it names, `.unchanged` for the others.
    static func expect<Build: UpgradeBuild>(
        _ build: Build.Type, _ store: WorkflowStore, _ expected: [UpgradeStage: Outcome], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [UpgradeStage: ReplayGateResult] {
        let results = try gate(build, store)
        for stage in UpgradeStage.allCases {
            let result = results[stage]!
            #expect(result.outcome == expected[stage] ?? .unchanged,
                    "\(Build.name) \(stage.rawValue): \(result.outcome) (\(result.cause ?? "-")) \(result.problem ?? "")", sourceLocation: sourceLocation)
        }
        return results
    }

    @Test("changes that keep every instance as it was: a new optional field, a declared field, a rename that keeps its key, a new action, a version bump with its old decoder, changes behind version markers")
    func safeChanges() async throws {
        let dir = try await Self.seeded("gate-safe")
        let store = try WorkflowStore.open(path: dir.path)
        _ = try Self.expect(BuildV1.self, store, [:])
        _ = try Self.expect(BuildOptionalField.self, store, [:])
        _ = try Self.expect(BuildDeclaredField.self, store, [:])
        _ = try Self.expect(BuildRenamedKeepingKey.self, store, [:])
        _ = try Self.expect(BuildNewAction.self, store, [:])
        _ = try Self.expect(BuildQuantityVersioned.self, store, [:])
        _ = try Self.expect(BuildFeeMarker.self, store, [:])
        _ = try Self.expect(BuildChargeMarker.self, store, [:])
    }

    @Test("state changes not declared: every instance fails at resume (those with a snapshot say it does not decode); with digest checks off they resume with another state, which the gate names")
    func undeclaredStateChanges() async throws {
        let dir = try await Self.seeded("gate-state")
        let store = try WorkflowStore.open(path: dir.path)
        let all = Dictionary(uniqueKeysWithValues: UpgradeStage.allCases.map { ($0, Outcome.failsAtResume) })
        let defaulted = try Self.expect(BuildDefaultedField.self, store, all)
        #expect(defaulted[.openLong]?.problem?.contains("no value for the field \"priority\"") == true, "\(defaulted[.openLong]!)")
        #expect(defaulted[.open]?.divergence?.sequence == 2)
        _ = try Self.expect(BuildRenamedField.self, store, all)
        let unchecked = try Self.expect(BuildDefaultedFieldUnchecked.self, store,
                                        Dictionary(uniqueKeysWithValues: UpgradeStage.allCases.map { ($0, Outcome.resumesWithDifferentState) }))
        #expect(unchecked[.paid]?.divergence?.changes.isEmpty == false, "\(unchecked[.paid]!)")
    }

    @Test("apply changed: instances whose pay replays fail at resume, those whose pay lies before their snapshot resume as they were but fail a replay from the first entry")
    func applyChanged() async throws {
        let dir = try await Self.seeded("gate-apply")
        let store = try WorkflowStore.open(path: dir.path)
        let results = try Self.expect(BuildFee.self, store, [
            .paid: .failsAtResume, .paidLong: .failsAtResume, .charged: .failsAtResume, .shipped: .failsAtResume,
            .shippedLong: .fullReplayFails, .paidBeforeSnapshot: .fullReplayFails,
        ])
        let paid = try #require(results[.paid]?.divergence)
        #expect(paid.sequence == 4 && paid.action == "order.pay", "\(paid)")
        #expect(paid.changes.contains("total: 261 → 511") && paid.changes.contains("status: \"open\" → \"paid\""), "\(paid.changes)")
        #expect(results[.paidBeforeSnapshot]?.cause?.contains("order.pay") == true, "\(results[.paidBeforeSnapshot]!)")
    }

    @Test("an action removed, a payload changed without a version: the instances that replay it fail at resume, those past it in a snapshot fail a full replay")
    func removedAndChangedActions() async throws {
        let dir = try await Self.seeded("gate-actions")
        let store = try WorkflowStore.open(path: dir.path)
        let withoutShip = try Self.expect(BuildWithoutShip.self, store, [.shipped: .failsAtResume, .shippedLong: .fullReplayFails])
        #expect(withoutShip[.shipped]?.problemKind == "unknownActionType")
        var expected = Dictionary(uniqueKeysWithValues: UpgradeStage.allCases.map { ($0, Outcome.failsAtResume) })
        for stage in [UpgradeStage.openLong, .paidLong, .shippedLong, .paidBeforeSnapshot] { expected[stage] = .fullReplayFails }
        let quantity = try Self.expect(BuildQuantityUnversioned.self, store, expected)
        #expect(quantity[.open]?.problemKind == "undecodablePayload")
    }

    @Test("render changes are named: a worker removed (the paid orders would wait forever), a worker added, a child's key renamed (the label task under another idempotency key)")
    func renderChanges() async throws {
        let dir = try await Self.seeded("gate-render")
        let store = try WorkflowStore.open(path: dir.path)
        let paid: [UpgradeStage] = [.paid, .paidLong, .paidBeforeSnapshot]
        let withoutCharge = try Self.expect(BuildWithoutCharge.self, store, Dictionary(uniqueKeysWithValues: paid.map { ($0, .resumesWithOtherWaits) }))
        for stage in paid {
            let diff = try #require(withoutCharge[stage]?.renderDiff)
            #expect(diff.removed.map(\.key) == ["charge"] && diff.added.isEmpty, "\(stage): \(diff)")
            let key = diff.removed.first?.idempotencyKey ?? ""
            #expect(key.hasPrefix("\(stage.id)~") && key.contains("/Order#charge@"), "\(diff)")
        }
        #expect(withoutCharge[.paid]?.cause == "render no longer declares /Order#charge")
        let audits = try Self.expect(BuildAudits.self, store, Dictionary(uniqueKeysWithValues: paid.map { ($0, .resumesWithOtherWaits) }))
        #expect(audits[.paid]?.renderDiff?.added.map(\.key) == ["audit"], "\(String(describing: audits[.paid]))")
        #expect(audits[.paid]?.renderDiff?.removed.isEmpty == true)
        // The child renamed: the charged order fails at resume (its digests), and the gate names the move.
        let renamed = try Self.expect(BuildChildKey.self, store, [.charged: .failsAtResume, .shipped: .failsAtResume, .shippedLong: .fullReplayFails])
        let moved = try #require(renamed[.charged]?.renderDiff?.rekeyed.first, "\(String(describing: renamed[.charged]))")
        #expect(moved.before.node.contains("Packing[packing]") && moved.after.node.contains("Packing[pack]"), "\(moved)")
        // The divergence itself says what render declares differently.
        let problem = renamed[.charged]?.problem ?? ""
        #expect(problem.contains("render now declares /Order/Packing[pack]") && problem.contains("declared /Order/Packing[packing]"), "\(problem)")
        let unchecked = try Self.expect(BuildChildKeyUnchecked.self, store, [.charged: .resumesWithDifferentState, .shipped: .resumesWithDifferentState,
                                                                             .shippedLong: .fullReplayFails])
        #expect(unchecked[.charged]?.renderDiff?.rekeyed.count == 1, "\(String(describing: unchecked[.charged]))")
    }

    @Test("an export with its snapshots gates as the store does; a gate over no fixture fails")
    func exportsGateAsTheStore() async throws {
        let dir = try await Self.seeded("gate-export")
        let store = try WorkflowStore.open(path: dir.path)
        let exportDir = TemporaryDirectory("gate-export-lines")
        let file = URL(fileURLWithPath: exportDir.child("orders.jsonl"))
        var text = ""
        for instance in try store.instances() {
            for line in try store.exportLines(of: instance.id) { text += String(decoding: try JSONEncoder().encode(line), as: UTF8.self) + "\n" }
        }
        try text.write(to: file, atomically: true, encoding: .utf8)
        #expect(text.contains("\"kind\":\"snapshot\""))
        for build in [BuildDefaultedFieldUnchecked.self, BuildFee.self, BuildWithoutCharge.self] as [any UpgradeBuild.Type] {
            func compare<B: UpgradeBuild>(_ build: B.Type) throws {
                var replayer = WorkflowReplayer()
                replayer.register(UpgradeOrder<B>.self, configuration: UpgradeOrder<B>.configuration())
                let fromStore = try replayer.check(store).results.map { "\($0.instance) \($0.outcome) \($0.cause ?? "")" }
                let fromExport = try replayer.check(fixturesIn: URL(fileURLWithPath: exportDir.path)).results.map { "\($0.instance) \($0.outcome) \($0.cause ?? "")" }
                #expect(fromStore == fromExport, "\(B.name)")
            }
            try compare(build)
        }
        var replayer = WorkflowReplayer()
        replayer.register(UpgradeOrder<BuildV1>.self, configuration: UpgradeOrder<BuildV1>.configuration())
        #expect(throws: WorkflowReplayerError.self) { try replayer.check(exports: []) }
        #expect(throws: WorkflowReplayerError.self) { try replayer.check(fixturesIn: URL(fileURLWithPath: TemporaryDirectory("gate-empty").path)) }
    }
}

/// Rolling an encoding change out in two steps (issue 58, point 6).
@Suite("A payload version rolled out in two steps can be rolled back, and the gate says so (V1)", .serialized)
struct RollbackTests {
    /// Copies `seed`, resumes it with `Build`, adds an item to the open order and stops.
    static func ran<Build: UpgradeBuild>(_ build: Build.Type, over seed: TemporaryDirectory) async throws -> TemporaryDirectory {
        let copy = TemporaryDirectory("rollback-\(Build.name)")
        try? FileManager.default.removeItem(atPath: copy.path)
        try seed.copyStore(to: copy.path)
        let store = try WorkflowStore.open(path: copy.path)
        let host = try store.resume(id: UpgradeStage.open.id, as: UpgradeOrder<Build>.self, configuration: UpgradeOrder<Build>.configuration())
        _ = await host.rendering.addItem.sendAndWait(.init(name: "sku-7", price: 7))
        await host.stopAndWait()
        try store.close()
        return copy
    }

    @Test("a build that reads version 2 and writes version 1 leaves a store the first build resumes; one that writes version 2 does not, and the gate run with the first build says which")
    func twoSteps() async throws {
        let seed = try await ReplayGateTests.seeded("rollback-seed")
        let writingFirst = try await Self.ran(BuildQuantityWritingFirst.self, over: seed)
        let writingSecond = try await Self.ran(BuildQuantityVersioned.self, over: seed)
        do {
            let store = try WorkflowStore.open(path: writingFirst.path)
            #expect(try store.entries(of: UpgradeStage.open.id).last?.actionVersion == 1)
            let gate = try ReplayGateTests.gate(BuildV1.self, store)
            #expect(gate.values.allSatisfy { $0.outcome == .unchanged }, "\(gate.values.map { "\($0.instance) \($0.outcome)" })")
            let host = try store.resume(id: UpgradeStage.open.id, as: UpgradeOrder<BuildV1>.self, configuration: UpgradeOrder<BuildV1>.configuration())
            #expect(host.rendering.state.items == ["sku-0", "sku-7"])
            await host.stopAndWait()
        }
        let store = try WorkflowStore.open(path: writingSecond.path)
        #expect(try store.entries(of: UpgradeStage.open.id).last?.actionVersion == 2)
        let gate = try ReplayGateTests.gate(BuildV1.self, store)
        #expect(gate[.open]?.outcome == .failsAtResume && gate[.open]?.problemKind == "unknownActionType", "\(String(describing: gate[.open]))")
        #expect(gate.filter { $0.key != .open }.values.allSatisfy { $0.outcome == .unchanged })
        // The second step, over the first's store: it reads what the first wrote.
        let next = try ReplayGateTests.gate(BuildQuantityVersioned.self, try WorkflowStore.open(path: writingFirst.path))
        #expect(next.values.allSatisfy { $0.outcome == .unchanged })
    }
}
