import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

/// The upgrade suite on LMDB: every build of the order service over a copy of the store the first
/// build left, stopped with SIGTERM and killed with SIGKILL (issue 58).
@Suite("Upgrades: each build of a service over the store its first build left, after SIGTERM and SIGKILL (LMDB)", .serialized)
struct UpgradeSuiteTests {
    /// The first build's store, seeded by a child process that `stop` ends.
    static func seed(stoppedWith stop: Int32) throws -> TemporaryDirectory {
        let dir = TemporaryDirectory("upgrade-seed-\(stop)")
        let child = try ChildProcess(["upgrade-seed", dir.path], mergeStandardError: true)
        let ready = child.readLine(until: { $0 == "seeded" || $0.hasPrefix("error") }, timeout: .seconds(60))
        #expect(ready == "seeded", "\(child.diagnosis)")
        child.kill(stop)
        let rest = child.readRemainingLines(timeout: .seconds(30))
        let status = try child.waitForExit()
        if stop == SIGTERM {
            #expect(status == 0 && rest.contains("stopped"), "\(status) \(rest)")
        } else {
            #expect(status == 128 + SIGKILL)
        }
        return dir
    }

    /// The builds a run covers: all of them, or under a sanitizer a few of each kind of outcome.
    static var builds: [any UpgradeBuild.Type] {
        TestLoad.isLight ? [BuildDeclaredField.self, BuildFee.self, BuildWithoutCharge.self, BuildChildKey.self] : upgradeBuilds
    }

    @Test("every change, every stage, after SIGTERM and after SIGKILL: each instance resumes or fails as documented, never in a state neither build computes from its log, and the new build's work goes on", arguments: [SIGTERM, SIGKILL])
    func everyChange(stop: Int32) throws {
        let seed = try Self.seed(stoppedWith: stop)
        var problems: [String] = []
        for build in Self.builds {
            let copy = TemporaryDirectory("upgrade-\(build.name)-\(stop)")
            try? FileManager.default.removeItem(atPath: copy.path)
            try seed.copyStore(to: copy.path)
            let computed: [String: Set<String>]
            do {
                let store = try WorkflowStore.open(path: copy.path)
                computed = try UpgradeSuite.computedStates(in: store, by: build)
                try store.close()
            }
            let run = try UpgradeSuite.run(build, on: copy.path)
            problems += UpgradeSuite.problems(of: run, build: build, computed: computed, seed: stop == SIGTERM ? "SIGTERM" : "SIGKILL")
            // A failed instance is marked failed, the others run on.
            let store = try WorkflowStore.open(path: copy.path)
            for stage in UpgradeSuite.failures(of: build).keys {
                #expect(try store.instance(id: stage.id)?.status == .failed, "\(build.name): \(stage.id)")
            }
            try store.close()
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
