import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

/// The control plane against a running service in another process (issue 59, point 2): its
/// instances cancelled, paused and unpaused, and terminated at random moments of their lives
/// through this process's store, each request applied by the service as an entry of its log.
@Suite("The control plane reaches a running service in another process (LMDB)", .serialized)
struct ControlServiceTests {
    @Test("cancel, pause and terminate, each at 100 random moments or more of a booking's life: one cancel entry and cleanup once (children per policy), nothing applied while paused and the timer once, nothing after a terminate, no call twice")
    func fromAnotherProcess() async throws {
        let dir = TemporaryDirectory("control-service")
        let path = dir.child("store")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = try WorkflowStore.open(path: path)
        let perVerb = TestLoad.scaled(150)
        let outcome = try await ControlScenario(location: path, ledger: dir.child("ledger"), perVerb: perVerb).run(controller: store)
        #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(20).joined(separator: "\n"))")
        print("control scenario: answers \(outcome.answers.sorted { $0.key < $1.key }), statuses \(outcome.statuses.sorted { $0.key.rawValue < $1.key.rawValue })")
        // The moments are spread over the bookings' lives: each verb mostly lands while they run.
        for verb in ["cancel", "pause", "terminate"] {
            // Each verb reaches at least 100 bookings while they run (the others have ended: refused).
            #expect((outcome.answers["\(verb) applied"] ?? 0) >= TestLoad.scaled(100), "\(outcome.answers)")
        }
        #expect(outcome.answers["pause applied"] == outcome.answers["unpause applied"], "\(outcome.answers)")
        #expect((outcome.statuses[.cancelled] ?? 0) > 0 && (outcome.statuses[.terminated] ?? 0) > 0 && (outcome.statuses[.completed] ?? 0) > 0,
                "\(outcome.statuses)")
        try store.close()
    }
}
