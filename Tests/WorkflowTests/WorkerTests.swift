import Synchronization
import Testing
import TestSupport
import Workflow

/// Collects worker outputs in its state; runs the worker while `running` is true.
struct Collector<W: Worker>: Workflow, Sendable where W.Output == Int {
    var worker: W
    var running = true
    var stopAt: Int? = nil

    struct Rendering: Sendable { let values: [Int] }

    struct Received: WorkflowAction {
        typealias WorkflowType = Collector
        let value: Int
        func apply(toState state: inout [Int]) -> Never? {
            state.append(value)
            return nil
        }
    }

    func makeInitialState() -> [Int] { [] }

    func render(state: [Int], context: RenderContext<Collector>) -> Rendering {
        let stopped = stopAt.map { state.contains($0) } ?? false
        if running && !stopped {
            context.run(worker, key: "w") { Received(value: $0) }
        }
        return Rendering(values: state)
    }
}

/// Emits the given values all at once, as soon as it runs.
struct BurstWorker: Worker {
    let values: [Int]
    func run() -> AsyncStream<Int> {
        AsyncStream { continuation in
            for value in values { continuation.yield(value) }
            continuation.finish()
        }
    }
}

/// Never emits; runs until cancelled.
struct IdleWorker: Worker, Equatable {
    var generation = 0
    func run() -> AsyncStream<Int> { AsyncStream { _ in } }
}

/// Waits (without sleeping loops of seconds) until `host`'s rendering satisfies `predicate`.
func waitForRendering<W: Workflow & Sendable>(
    _ host: WorkflowHost<W>, timeout: Duration = .seconds(10), _ predicate: (W.Rendering) -> Bool
) async -> W.Rendering? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        let rendering = host.rendering
        if predicate(rendering) { return rendering }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return nil
}

@Suite("Workers (R5)")
struct WorkerTests {
    @Test("a worker that emits immediately on start has its value applied, after the declaring render pass")
    func immediateEmission() async {
        let errors = EventLog()
        let log = EventLog()
        let host = WorkflowHost(
            workflow: Collector(worker: BurstWorker(values: [7])),
            configuration: .init(observers: [RecordingObserver(log: log)], programmerErrors: .report { errors.append($0) }))
        let rendering = await waitForRendering(host) { $0.values == [7] }
        #expect(rendering != nil)
        #expect(errors.all.isEmpty)
        let events = log.all
        #expect(events.firstIndex(of: "worker start w")! > events.firstIndex(of: "render")!)
    }

    @Test("three values emitted at once arrive as three actions and three render passes, in order")
    func burstOfThree() async {
        let errors = EventLog()
        let log = EventLog()
        let host = WorkflowHost(
            workflow: Collector(worker: BurstWorker(values: [1, 2, 3])),
            configuration: .init(observers: [RecordingObserver(log: log)], programmerErrors: .report { errors.append($0) }))
        let rendering = await waitForRendering(host) { $0.values.count == 3 }
        #expect(rendering?.values == [1, 2, 3])
        #expect(log.count { $0 == "render" } == 4)
        #expect(log.count { $0.hasPrefix("apply") } == 3)
        #expect(errors.all.isEmpty)
    }

    @Test("an output emitted after a render pass ended its worker is never applied")
    func outputAfterEndIsNotApplied() async {
        let host = WorkflowHost(workflow: Collector(worker: BurstWorker(values: [1, 2, 3]), stopAt: 1))
        _ = await waitForRendering(host) { !$0.values.isEmpty }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(host.rendering.values == [1])
    }

    @Test("workers start after the declaring render pass, end at the first pass that drops them, restart when changed")
    func workerLifecycle() async {
        let log = EventLog()
        let host = WorkflowHost(workflow: Collector(worker: IdleWorker()), configuration: .init(observers: [RecordingObserver(log: log)]))
        #expect(log.all.suffix(2) == ["render", "worker start w"])
        host.update(workflow: Collector(worker: IdleWorker()))
        #expect(log.count { $0.hasPrefix("worker") } == 1)  // equivalent: kept running
        host.update(workflow: Collector(worker: IdleWorker(generation: 1)))
        #expect(log.all.suffix(3) == ["render", "worker end w", "worker start w"])
        host.update(workflow: Collector(worker: IdleWorker(generation: 1), running: false))
        #expect(log.all.suffix(2) == ["render", "worker end w"])
    }

    @Test("stopping the host cancels running workers")
    func stopCancelsWorkers() async {
        let log = EventLog()
        let host = WorkflowHost(workflow: Collector(worker: IdleWorker()), configuration: .init(observers: [RecordingObserver(log: log)]))
        await host.stopAndWait()
        #expect(log.all.contains("worker end w"))
        #expect(log.all.last == "worker end w" || log.all.contains("end /Collector<IdleWorker>"))
    }

    @Test("a value emitted together with one whose action ends the worker is reported as discarded, never silently lost (issue 22, 6)")
    func secondValueOfEndedWorkerIsReported() async {
        for _ in 0..<20 {
            let log = EventLog()
            let host = WorkflowHost(
                workflow: Collector(worker: BurstWorker(values: [1, 2]), stopAt: 1),
                configuration: .init(observers: [RecordingObserver(log: log)]))
            let rendering = await waitForRendering(host) { $0.values == [1] }
            #expect(rendering != nil)
            let deadline = ContinuousClock.now + .seconds(5)
            while log.count(where: { $0.hasPrefix("discarded") }) == 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(1))
            }
            #expect(log.all.filter { $0.hasPrefix("discarded") } == ["discarded workerEnded output of a worker: Int"], "\(log.all)")
            #expect(host.rendering.values == [1])
        }
    }

    @Test("with an observer attached, children whose workers run are dropped without touching freed nodes (issue 22, 1)")
    func droppedChildrenWithObserver() throws {
        // A use after free reads freed memory without always crashing: 20 rounds of 1,000
        // children made the unfixed runtime crash in nearly every run.
        let child = try ChildProcess(["observer-worker-teardown", "20"], mergeStandardError: true)
        let output = child.readRemainingLines(timeout: .seconds(120)).joined(separator: "\n")
        let status = try child.waitForExit()
        #expect(status == 0, "the child exited with \(status): \(output)")
        #expect(output.contains("done 20"), "child said: \(output)")
    }
}
