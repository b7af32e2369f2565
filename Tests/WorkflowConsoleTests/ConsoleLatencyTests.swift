import CoreMetrics
import DurableWorkflow
import Foundation
import LMDB
import TestSupport
import Testing
import Workflow
import WorkflowConsole
import WorkflowExamples
import WorkflowLMDB
import WorkflowLocks

@Suite("The console's latency percentiles: the engine's timers, in a console inside the service")
struct ConsoleLatencyTests {
    @Test("percentiles of known durations lie within a bucket (4.4%) of the true ones, and seconds past the window drop out")
    func percentiles() throws {
        let clock = Lock(1_000_000.0)
        let latency = ConsoleLatency(clock: { clock.withLock { $0 } })
        let timer = latency.makeTimer(label: "workflow_commit_duration", dimensions: [])
        // 1 ms to 100 ms, one each: p50 ≈ 50 ms, p90 ≈ 90 ms, p99 ≈ 99 ms.
        for millis in 1...100 { timer.recordNanoseconds(Int64(millis) * 1_000_000) }
        let commit = try #require(latency.percentiles(overLast: 60).first { $0.label == "workflow_commit_duration" })
        #expect(commit.count == 100)
        for (value, truth) in [(commit.p50, 50_000.0), (commit.p90, 90_000.0), (commit.p99, 99_000.0), (commit.max, 100_000.0)] {
            let value = try #require(value)
            #expect(value >= truth && value <= truth * 1.045, "\(value) against \(truth)")
        }
        // Another timer of the engine's is kept apart; a counter records nothing.
        latency.makeTimer(label: "workflow_replay_duration", dimensions: []).recordNanoseconds(2_000)
        latency.makeCounter(label: "workflow_commits", dimensions: []).increment(by: 5)
        #expect(latency.percentiles(overLast: 60).first { $0.label == "workflow_replay_duration" }?.count == 1)
        // Two minutes on, the window of one minute holds nothing of them.
        clock.withLock { $0 += 120 }
        let later = latency.percentiles(overLast: 60)
        #expect(later.allSatisfy { $0.count == 0 && $0.p50 == nil })
        #expect(latency.percentiles(overLast: 300).first { $0.label == "workflow_commit_duration" }?.count == 100)
    }

    @Test("a console inside the service serves the commits' latency percentiles; wfctl serve's says where they are")
    func served() async throws {
        let dir = TemporaryDirectory("console-latency")
        let latency = ConsoleLatency()
        let store = WorkflowStore(backend: try LMDBStorage.open(path: dir.path), metricsFactory: latency)
        let host = try store.start(Counter(), id: "c", configuration: DurableConfiguration(mode: .strict, actions: Counter.actions))
        for _ in 0..<200 { host.rendering.increment.send(Counter.Increment()) }
        host.stop()
        let console = try await RunningConsole.start(WorkflowConsole(store: store, configuration: ConsoleConfiguration(port: 0), latency: latency))
        defer { console.stop() }
        let answer = try #require(try await console.json("/api/latency?minutes=1") as? [String: Any])
        #expect(answer["unavailable"] == nil || answer["unavailable"] is NSNull)
        let timers = try #require(answer["timers"] as? [[String: Any]])
        let commit = try #require(timers.first { $0["label"] as? String == "workflow_commit_duration" })
        #expect((commit["count"] as? Int ?? 0) >= 200)
        let figures = ["p50", "p90", "p99", "max"].compactMap { commit[$0] as? Double }
        #expect(figures.count == 4 && figures == figures.sorted() && figures[0] > 0, "\(commit)")

        let outside = try await RunningConsole.start(WorkflowConsole(store: store, configuration: ConsoleConfiguration(port: 0)))
        defer { outside.stop() }
        let none = try #require(try await outside.json("/api/latency") as? [String: Any])
        #expect((none["unavailable"] as? String)?.contains("inside the service") == true)
        #expect((none["timers"] as? [Any])?.isEmpty == true)
    }
}
