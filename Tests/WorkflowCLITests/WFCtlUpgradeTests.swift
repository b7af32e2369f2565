import DurableWorkflow
import Foundation
import Logging
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB
import WorkflowService

/// `wfctl ARGUMENTS` of a service's own tool registering the order service's build `build`.
func serviceTool(_ build: any UpgradeBuild.Type, _ arguments: [String]) throws -> (code: Int32, lines: [String]) {
    let child = try ChildProcess(["upgrade-wfctl", build.name] + arguments, mergeStandardError: true)
    let lines = child.readRemainingLines()
    return (try child.waitForExit(), lines)
}

@Suite("A deploy's day with wfctl: the gate before, bulk resume after, a running service that picks resumed instances up (issue 58)", .serialized)
struct WFCtlUpgradeTests {
    @Test("the gate of a breaking build exits with its worst outcome and names each instance's cause; --json holds the report")
    func gate() async throws {
        let dir = TemporaryDirectory("wfctl-gate")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for host in try await UpgradeOrder<BuildV1>.seed(store) { await host.stopAndWait() }
            try store.close()
        }
        let safe = try serviceTool(BuildDeclaredField.self, ["verify", "--gate", dir.path])
        #expect(safe.code == 0, "\(safe.lines.joined(separator: "\n"))")
        let breaking = try serviceTool(BuildFee.self, ["verify", "--gate", dir.path])
        #expect(breaking.code == 13, "\(breaking.lines.joined(separator: "\n"))")
        let text = breaking.lines.joined(separator: "\n")
        #expect(text.contains("order-s3") && text.contains("failsAtResume") && text.contains("total: 261 → 511"), "\(text)")
        #expect(text.contains("failsAtResume 4: nonDeterministic at order.pay on /Order"), "\(text)")
        let report = try serviceTool(BuildWithoutCharge.self, ["verify", "--gate", "--json", dir.path])
        #expect(report.code == 11)
        let json = report.lines.filter { !$0.hasPrefix("wfctl:") }.joined(separator: "\n")
        let decoded = try JSONDecoder().decode(ReplayGateReport.self, from: Data(json.utf8))
        #expect(decoded.count(.resumesWithOtherWaits) == 3 && decoded.count(.unchanged) == 7)
        #expect(decoded.groups.first?.cause == "render no longer declares /Order#charge")
    }

    @Test("markers lists which instances fixed each version of a marker and which have not fixed it (they take version 1)")
    func markers() async throws {
        let dir = TemporaryDirectory("wfctl-markers")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for host in try await UpgradeOrder<BuildV1>.seed(store) { await host.stopAndWait() }
            let configuration = UpgradeOrder<BuildFeeMarker>.configuration()
            let open = try store.resume(id: UpgradeStage.open.id, as: UpgradeOrder<BuildFeeMarker>.self, configuration: configuration)
            _ = await open.rendering.pay.sendAndWait(.init())
            await open.stopAndWait()
            let fresh = try store.start(UpgradeOrder<BuildFeeMarker>(id: "order-new"), id: "order-new", configuration: configuration)
            await fresh.stopAndWait()
            try store.close()
        }
        let listed = try serviceTool(BuildFeeMarker.self, ["markers", dir.path, "--json"])
        #expect(listed.code == 0, "\(listed.lines)")
        struct Row: Decodable {
            let marker: String
            let versions: [String: [String]]
            let notFixed: [String]
        }
        let rows = try JSONDecoder().decode([Row].self, from: Data(listed.lines.joined(separator: "\n").utf8))
        #expect(rows.map(\.marker) == ["fee"])
        #expect(rows.first?.versions == ["2": ["order-new", "order-s0"]], "\(rows)")
        #expect(rows.first?.notFixed.count == 9 && rows.first?.notFixed.contains("order-s3") == true)
    }

    @Test("resume --failed takes the failed instances of a kind (a dry run first), replays each and marks it running; a running service adopts them without a restart")
    func bulkResume() async throws {
        let dir = TemporaryDirectory("wfctl-bulk-resume")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            for host in try await UpgradeOrder<BuildV1>.seed(store) { await host.stopAndWait() }
            // The breaking build marks failed every instance whose log replays an addItem.
            for result in try store.resumeAll(UpgradeOrder<BuildQuantityUnversioned>.self, configuration: UpgradeOrder<BuildQuantityUnversioned>.configuration()) {
                await result.host?.stopAndWait()
            }
            try store.close()
        }
        let store = try WorkflowStore.open(path: dir.path)
        let failed = try store.instances(status: .failed)
        #expect(failed.count == 6)
        #expect(failed.allSatisfy { $0.failure?.hasPrefix("undecodablePayload: the payload does not decode") == true }, "\(failed.map(\.failure))")
        // The first build's service runs the others.
        let service = WorkflowService(store: store, logger: Logger(label: "test"), instanceCountsInterval: nil, adoptionInterval: .milliseconds(100))
        service.register(UpgradeOrder<BuildV1>.self, configuration: UpgradeOrder<BuildV1>.configuration())
        let running = Task { try await service.run() }
        #expect(await until { service.state == .running })
        #expect(service.runningInstances.count == 4)

        let other = try serviceTool(BuildV1.self, ["resume", dir.path, "--failed", "--kind", "nonDeterministic"])
        #expect(other.code == 0 && other.lines.last == "0 of 0 failed instance(s) resumed", "\(other.lines)")
        let dry = try serviceTool(BuildV1.self, ["resume", dir.path, "--failed", "--kind", "undecodablePayload", "--dry-run"])
        #expect(dry.code == 0 && dry.lines.last == "6 of 6 failed instance(s) would be resumed", "\(dry.lines)")
        #expect(try store.instances(status: .failed).count == 6)
        let resumed = try serviceTool(BuildV1.self, ["resume", dir.path, "--failed", "--kind", "undecodablePayload", "--json"])
        #expect(resumed.code == 0, "\(resumed.lines)")
        #expect(try store.instances(status: .failed).isEmpty)
        #expect(try store.instance(id: UpgradeStage.open.id)?.failure == nil)
        #expect(await until { service.runningInstances.count == 10 }, "\(service.runningInstances)")
        running.cancel()
        _ = try? await running.value
    }
}

/// Whether `condition` holds within ten seconds.
private func until(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}
