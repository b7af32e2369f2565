import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

/// The service's own takeover loop on LMDB (issue 59, point 5): processes on one store adopt the
/// instances of a process that died, with no caller polling for them.
@Suite("WorkflowService takes over a dead process's instances by itself (LMDB)", .serialized)
struct TakeoverTests {
    @Test("three host processes, one killed with SIGKILL 20 times: every instance is adopted by a live one and ticks on; every log replays")
    func twentyKills() async throws {
        let dir = TemporaryDirectory("takeover-lmdb")
        let store = try WorkflowStore.open(path: dir.path)
        let outcome = try await TakeoverScenario(location: dir.path, instances: 30, kills: TestLoad.isLight ? 4 : 20).run(store: store)
        #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(10).joined(separator: "\n"))")
        #expect(outcome.recoveries.count == (TestLoad.isLight ? 4 : 20))
        print("takeover (LMDB): recoveries \(outcome.recoveries.sorted().map { "\($0)" }.joined(separator: ", "))")
        try store.close()
    }
}
