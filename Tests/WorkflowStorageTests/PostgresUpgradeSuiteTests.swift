#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres

/// The upgrade suite on PostgreSQL: every build of the order service over a copy of the schema
/// its first build left, stopped with SIGTERM and killed with SIGKILL (issue 58).
@Suite("Upgrades: each build of a service over the store its first build left, after SIGTERM and SIGKILL (PostgreSQL)", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresUpgradeSuiteTests {
    static func url(_ configuration: PostgresConfiguration) -> String {
        "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
    }

    @Test("every change, every stage, after SIGTERM and after SIGKILL: each instance resumes or fails as documented, never in a state neither build computes from its log", arguments: [SIGTERM, SIGKILL])
    func everyChange(stop: Int32) throws {
        let seed = PostgresBackendTests.fresh()
        let child = try ChildProcess(["upgrade-seed", Self.url(seed)], mergeStandardError: true)
        #expect(child.readLine(until: { $0 == "seeded" || $0.hasPrefix("error") }, timeout: .seconds(60)) == "seeded", "\(child.diagnosis)")
        child.kill(stop)
        _ = child.readRemainingLines(timeout: .seconds(30))
        _ = try child.waitForExit()
        var reading = seed
        reading.readOnly = true
        let original = try WorkflowStore.open(reading)
        let lines = try original.instances().flatMap { try original.exportLines(of: $0.id) }
        try original.close()
        var problems: [String] = []
        for build in TestLoad.isLight ? [BuildDeclaredField.self, BuildFee.self] as [any UpgradeBuild.Type] : upgradeBuilds {
            let copy = PostgresBackendTests.fresh()
            let computed: [String: Set<String>]
            do {
                let store = try WorkflowStore.open(copy)
                try store.importLines(lines)
                computed = try UpgradeSuite.computedStates(in: store, by: build)
                try store.close()
            }
            let run = try UpgradeSuite.run(build, on: Self.url(copy))
            problems += UpgradeSuite.problems(of: run, build: build, computed: computed, seed: stop == SIGTERM ? "SIGTERM" : "SIGKILL")
            let store = try WorkflowStore.open(copy)
            for stage in UpgradeSuite.failures(of: build).keys {
                #expect(try store.instance(id: stage.id)?.status == .failed, "\(build.name): \(stage.id)")
            }
            try store.close()
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
#endif
