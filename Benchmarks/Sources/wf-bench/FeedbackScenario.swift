import DurableWorkflow
import Foundation
import WorkflowFeedback
import WorkflowLMDB

/// A durable reducer for the benchmark: sums integers.
struct SumReducer: FeedbackReducer, Codable {
    func makeInitialState() -> Int { 0 }
    func reduce(_ state: inout Int, _ event: Int) { state += event }
}

/// Events per second through a feedback loop, in memory and durable, next to the runtime's actions/s.
enum FeedbackScenario {
    static let name = "feedback"

    static func run(runs: Int, scale: Double, runtime: Measurement?) throws -> [Measurement] {
        let events = Int(300_000 * scale)
        var memory = Measurement.measure(name, "in-memory", metric: "events_per_s", runs: runs,
                                         detail: "send + reduce + 1 render pass per event, no feedbacks") {
            let loop = FeedbackLoop(reducer: SumReducer())
            loop.start()
            let elapsed = seconds { for _ in 0..<events { loop.send(1) } }
            precondition(loop.state == events)
            loop.stop()
            return Double(events) / elapsed
        }
        if let runtime { memory = memory.relative(to: runtime) }
        let durableEvents = Int(30_000 * scale)
        let dir = try temporaryStore("feedback")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try WorkflowStore.open(path: dir)
        var instance = 0
        let durable = try Measurement.measure(name, "durable-grouped", metric: "events_per_s", runs: runs,
                                              detail: "durable loop, grouped commits, digests on; flushed at the end") {
            instance += 1
            let loop = try FeedbackLoop.durable(store: store, id: "loop-\(instance)", reducer: SumReducer(),
                                                configuration: DurableConfiguration(mode: .grouped))
            loop.start()
            let elapsed = seconds {
                for _ in 0..<durableEvents { loop.send(1) }
                let done = DispatchSemaphore(value: 0)
                Task.detached { await loop.flush(); done.signal() }
                done.wait()
            }
            precondition(loop.state == durableEvents && loop.failure == nil)
            loop.stop()
            return Double(durableEvents) / elapsed
        }
        return [memory, durable]
    }
}
