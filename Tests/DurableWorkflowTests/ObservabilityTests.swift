import DurableWorkflow
import Foundation
import InMemoryTracing
import Logging
import MetricsTestKit
import TestSupport
import TestWorkflows
import Testing
import Tracing
import Workflow
import WorkflowLMDB
import WorkflowLocks
import WorkflowSignals
import WorkflowStorage
import WorkflowTesting

@Suite("Observability: the engine's logs, metrics and spans")
struct ObservabilityTests {
    @Test("commits, replays and instance counts are recorded as swift-metrics of the store")
    func metrics() async throws {
        let metrics = TestMetrics()
        let store = WorkflowStore(backend: InMemoryStorage(), metricsFactory: metrics)
        let dimensions = [("store", store.path)]
        let configuration = DurableConfiguration(mode: .grouped, actions: DurableCounter.actions, snapshotEvery: nil)
        for id in ["a", "b"] {
            let host = try store.start(DurableCounter(), id: id, configuration: configuration)
            for amount in 1...10 { host.rendering.sink.send(.init(amount: amount)) }
            await host.stopAndWait()
        }
        // 2 props entries committed by the starts (each a commit of its own, issue 59: they were
        // left out), 20 actions through the pipeline; then a start with its first action.
        let first = try store.start(DurableCounter(), id: "c", with: DurableCounter.Add(amount: 1), configuration: configuration)
        await first.stopAndWait()
        #expect(try metrics.expectCounter("workflow_entries_committed", dimensions).totalValue == 24)
        #expect(try metrics.expectCounter("workflow_actions_applied", dimensions).totalValue == 21)
        let commits = try metrics.expectCounter("workflow_commits", dimensions).totalValue
        #expect(commits >= 4 && commits <= 23)
        #expect(try metrics.expectRecorder("workflow_commit_entries", dimensions).values.reduce(0, +) == 24)
        #expect(try metrics.expectTimer("workflow_commit_duration", dimensions).values.count == Int(commits))

        let resumed = try store.resume(id: "a", as: DurableCounter.self, configuration: configuration)
        #expect(try metrics.expectCounter("workflow_replayed_entries", dimensions).totalValue == 10)
        #expect(try metrics.expectTimer("workflow_replay_duration", dimensions).values.count == 1)
        await resumed.stopAndWait()

        try store.complete(id: "b")
        try store.recordInstanceCounts()
        #expect(try metrics.expectGauge("workflow_instances", dimensions + [("status", "running")]).lastValue == 2)
        #expect(try metrics.expectGauge("workflow_instances", dimensions + [("status", "completed")]).lastValue == 1)
        #expect(try metrics.expectGauge("workflow_instances", dimensions + [("status", "failed")]).lastValue == 0)
    }

    @Test("spans: an action from apply to commit, a replay, each attempt of a task (the failed one with its error)")
    func spans() async throws {
        let tracer = InMemoryTracer()
        let clock = ManualClock()
        let store = WorkflowStore.inMemory()
        var configuration = DurableConfiguration(actions: Payment.actions)
        configuration.tracer = tracer
        configuration.host.provide(Gateway([.fail(.init(code: 3)), .succeed]))
        configuration.host.clock = clock
        let host = try store.start(Payment(), id: "p", configuration: configuration)
        let deadline = ContinuousClock.now + .seconds(10)
        while host.rendering.progress?.failedAttempts != 1 || clock.sleeperCount != 1 {
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        clock.advance(by: .seconds(1))
        while host.rendering.state.receipt == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        await host.stopAndWait()
        let resumed = try store.resume(id: "p", as: Payment.self, configuration: configuration)
        await resumed.stopAndWait()

        let finished = tracer.finishedSpans
        let actions = finished.filter { $0.operationName == "workflow.action" }
        // The task's two events (a failed attempt, then the value); the props entry is no action.
        #expect(actions.count == 2, "\(finished.map(\.operationName))")
        #expect(actions.first?.attributes["workflow.instance"]?.toSpanAttribute() == "p")
        #expect(actions.first?.attributes["workflow.sequence"]?.toSpanAttribute() == 2)
        let attempts = finished.filter { $0.operationName == "workflow.task.attempt" }
        #expect(attempts.count == 2)
        #expect(attempts.first?.errors.count == 1 && attempts.last?.errors.isEmpty == true)
        #expect(finished.filter { $0.operationName == "workflow.replay" }.count == 1)
    }

    @Test("a signal's post-to-hand-over latency is recorded as a metric of the store")
    func signalLatency() throws {
        let metrics = TestMetrics()
        let dir = TemporaryDirectory("observability-signals")
        let store = WorkflowStore(backend: try LMDBStorage.open(path: dir.path), metricsFactory: metrics)
        let center = try SignalCenter.open(store: store, processIdentity: "test")
        defer { try? center.stop() }
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "test")
        let received = Lock(0)
        center.attach(consumer, handler: .atMostOnce { _ in received.withLock { $0 += 1 } })
        for value in 1...3 { try center.post(signal, value: value, terminatesConsumersAfterDelivery: false) }
        let deadline = ContinuousClock.now + .seconds(10)
        while received.withLock({ $0 }) < 3, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        let latencies = try metrics.expectTimer("workflow_signal_latency", [("store", store.path)]).values
        #expect(latencies.count == 3 && latencies.allSatisfy { $0 >= 0 })
    }

    @Test("a workflow's signal deliveries are timed once each, however often the dispatcher passes while one awaits its commit (issue 59: 27 for 5)")
    func signalLatencyOfWorkflowDeliveries() async throws {
        let metrics = TestMetrics()
        let dir = TemporaryDirectory("observability-workflow-signals")
        let store = WorkflowStore(backend: try LMDBStorage.open(path: dir.path), metricsFactory: metrics)
        let center = try SignalCenter.open(store: store, processIdentity: "test")
        defer { try? center.stop() }
        let signal = SignalID()
        // Grouped commits held 50 ms: each delivery waits for its commit while other posts wake the dispatcher.
        let host = try store.start(SignalTally(signal: signal), id: "tally",
                                   configuration: SignalTally.configuration(center: center, mode: .grouped(maxBatch: 1000, maxDelay: .milliseconds(50))))
        // The wait's consumer is registered by its worker, after the start returned; it sees the
        // versions posted from then on (under a sanitizer the first post came before it: 4 of 5).
        var deadline = ContinuousClock.now + .seconds(10)
        while (try center.consumers(of: signal).count) == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        for value in 1...5 { try center.post(signal, value: value, terminatesConsumersAfterDelivery: false) }
        deadline = ContinuousClock.now + .seconds(10)
        while host.rendering.count < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(host.rendering.count == 5)
        let latencies = try metrics.expectTimer("workflow_signal_latency", [("store", store.path)]).values
        #expect(latencies.count == 5, "\(latencies.count) timings for 5 deliveries")
        await host.stopAndWait()
    }

    /// A tracer whose ids start with `prefix`, so that two tracers' ids never meet by chance.
    static func tracer(_ prefix: String) -> InMemoryTracer {
        let counter = Lock(0)
        let next: @Sendable (String) -> String = { kind in "\(prefix)-\(kind)-\(counter.withLock { $0 += 1; return $0 })" }
        return InMemoryTracer(idGenerator: .init(nextTraceID: { next("trace") }, nextSpanID: { next("span") }))
    }

    @Test("a signal's trace context travels in the stored version: each delivery's span, in another center with another tracer, continues the post's trace")
    func signalTrace() async throws {
        let dir = TemporaryDirectory("observability-signal-trace")
        let store = try WorkflowStore.open(path: dir.path)
        let posterTracer = Self.tracer("poster"), consumerTracer = Self.tracer("consumer")
        let poster = try SignalCenter.open(store: store, processIdentity: "poster", configuration: SignalConfiguration(tracer: posterTracer))
        let consumers = try SignalCenter.open(store: store, processIdentity: "consumer", configuration: SignalConfiguration(tracer: consumerTracer))
        defer {
            try? poster.stop()
            try? consumers.stop()
        }
        let signal = SignalID(), tallied = SignalID()

        // A handler runs inside its delivery's span; a throwing one's span records the error.
        let consumer = try consumers.register(signal, owner: "test")
        let seen = Lock<[String?]>([])
        consumers.attach(consumer, handler: .atLeastOnce { delivery in
            seen.withLock { $0.append(ServiceContext.current?.inMemorySpanContext?.traceID) }
            if seen.withLock({ $0.count }) == 1 { throw CancellationError() }  // the first try fails
        })
        // A durable workflow's delivery: its span ends when the action it became commits.
        let host = try store.start(SignalTally(signal: tallied), id: "tally", configuration: {
            var configuration = SignalTally.configuration(center: consumers)
            configuration.tracer = consumerTracer
            return configuration
        }())
        // Its wait's consumer is registered by its worker, after the start returned: post once it is.
        let registered = ContinuousClock.now + .seconds(10)
        while (try consumers.consumers(of: tallied).count) == 0, ContinuousClock.now < registered { try await Task.sleep(for: .milliseconds(5)) }

        let request = posterTracer.startSpan("request")
        try ServiceContext.$current.withValue(request.context) {
            try poster.post(signal, value: 1)
            try poster.post(tallied, value: 5, terminatesConsumersAfterDelivery: false)
        }
        request.end()
        // Posted with no tracer: the delivery's span starts a trace of its own.
        let untraced = try SignalCenter.open(store: store, processIdentity: "untraced", configuration: SignalConfiguration())
        try untraced.post(tallied, value: 7, terminatesConsumersAfterDelivery: false)
        try untraced.stop()

        // A delivery's span ends after its handler returns (once the delivery is marked): wait for
        // the spans themselves, not only for the handler's second run.
        func handedOver() -> Int {
            consumerTracer.finishedSpans.filter {
                $0.operationName == "workflow.signal.deliver" && $0.attributes["workflow.signal"]?.toSpanAttribute() == "\(signal)".toSpanAttribute()
            }.count
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while (seen.withLock { $0.count } < 2 || handedOver() < 2 || host.rendering.count < 2), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        await host.stopAndWait()

        let posts = posterTracer.finishedSpans.filter { $0.operationName == "workflow.signal.post" }
        #expect(posts.count == 2 && posts.allSatisfy { $0.traceID == request.context.inMemorySpanContext?.traceID && $0.kind == .producer })
        #expect(posts.first?.attributes["workflow.signal"]?.toSpanAttribute() == "\(signal)".toSpanAttribute())
        #expect(posts.first?.attributes["workflow.signal.version"]?.toSpanAttribute() == 1)
        let traceID = try #require(request.context.inMemorySpanContext?.traceID)

        let deliveries = consumerTracer.finishedSpans.filter { $0.operationName == "workflow.signal.deliver" }
        let handed = deliveries.filter { $0.attributes["workflow.signal"]?.toSpanAttribute() == "\(signal)".toSpanAttribute() }
        #expect(handed.count == 2, "a failed hand-over and its retry")
        #expect(handed.allSatisfy { $0.traceID == traceID && $0.parentSpanID == posts[0].spanID && $0.kind == .consumer })
        #expect(handed.first?.errors.count == 1 && handed.last?.errors.isEmpty == true)
        #expect(seen.withLock { $0 } == [traceID, traceID], "the handler ran in its delivery's span")

        let workflowDeliveries = deliveries.filter { $0.attributes["workflow.signal"]?.toSpanAttribute() == "\(tallied)".toSpanAttribute() }
        #expect(workflowDeliveries.count == 2)
        let traced = try #require(workflowDeliveries.first { $0.traceID == traceID })
        #expect(traced.parentSpanID == posts[1].spanID)
        let other = try #require(workflowDeliveries.first { $0.traceID != traceID })
        #expect(other.parentSpanID == nil, "posted without a tracer: a root span")
        // Each action a delivery became links to the delivery's span.
        let actions = consumerTracer.finishedSpans.filter { $0.operationName == "workflow.action" }
        let linked = actions.flatMap(\.links).compactMap { $0.context.inMemorySpanContext?.spanID }
        #expect(Set(linked) == Set(workflowDeliveries.map(\.spanID)))
    }

    @Test("a post given the trace context of a caller outside the process continues that trace, and its versions carry the post's span")
    func signalPostContinuesGivenContext() throws {
        let dir = TemporaryDirectory("observability-given-context")
        let tracer = InMemoryTracer()
        let center = try SignalCenter.open(path: dir.path, processIdentity: "poster", configuration: SignalConfiguration(tracer: tracer))
        defer { try? center.stop() }
        let signal = SignalID()
        let given = TraceContext([InMemoryTracer.traceIDKey: "trace-7", InMemoryTracer.spanIDKey: "span-7"])
        let version = try center.post([SignalPost(signal: signal, payload: Array("1".utf8), traceContext: given)])[0]
        let post = try #require(tracer.finishedSpans.first { $0.operationName == "workflow.signal.post" })
        #expect(post.traceID == "trace-7" && post.parentSpanID == "span-7")
        let stored = try #require(try center.versions(of: signal).first { $0.version == version })
        #expect(stored.traceContext == TraceContext([InMemoryTracer.traceIDKey: "trace-7", InMemoryTracer.spanIDKey: post.spanID]))
    }

    @Test("the engine logs starts, resumes, takeovers of a dead process's claim, finished instances and instances marked failed")
    func logs() async throws {
        let dir = TemporaryDirectory("observability-logs")
        // A process that ran instance "torture" is killed: its claim stays behind.
        let child = try ChildProcess(["durable-counter-loop", dir.path, "strict"], mergeStandardError: true)
        _ = child.readLine(until: { $0.hasPrefix("ack ") })
        child.kill()
        _ = try child.waitForExit()

        let log = CapturedLog()
        var configuration = DurableConfiguration(actions: DurableCounter.actions)
        configuration.logger = log.logger
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.resume(id: "torture", as: DurableCounter.self, configuration: configuration)
        await host.stopAndWait()
        #expect(log.messages(at: .info) == ["took over an instance whose process is gone"])
        #expect(log.messages(at: .debug).contains("resumed an instance"))
        let resumed = try #require(log.all.first { $0.message == "resumed an instance" })
        #expect(resumed.metadata["instance"] == "torture" && resumed.metadata["entries"] != nil)

        var checkout = DurableConfiguration(actions: Checkout.actions)
        checkout.logger = log.logger
        let order = try store.start(Checkout(total: 1), id: "order", with: Checkout.Open(items: 1), configuration: checkout)
        try await order.rendering.pay.sendAndCommit(.init(amount: 1))
        _ = try await order.completion
        #expect(log.messages(at: .debug).contains("started an instance with its first action"))
        #expect(log.messages(at: .debug).contains("an instance finished"))

        let good = try store.entries(of: "torture")
        let bad = LogEntry(sequence: 2, time: good[1].time, origin: good[1].origin, nodePath: good[1].nodePath,
                           actionTag: good[1].actionTag, actionVersion: 5, payload: good[1].payload, digest: nil)
        try store.importInstance(id: "bad", workflowType: String(reflecting: DurableCounter.self), status: .running, created: .now(),
                                 entries: [good[0], bad])
        for result in try store.resumeAll(DurableCounter.self, configuration: configuration) { await result.host?.stopAndWait() }
        let failed = try #require(log.all.first { $0.level == .error })
        #expect(failed.message == "an instance cannot be replayed and is marked failed")
        #expect(failed.metadata["instance"] == "bad")

        // An instance deleted under its host: the host's next commit is refused, and it stops.
        let doomed = try store.start(DurableCounter(), id: "doomed", configuration: configuration)
        _ = try store.backend.delete(id: "doomed")
        doomed.rendering.sink.send(.init(amount: 1))
        #expect(doomed.failure != nil)
        let stopped = try #require(log.all.last { $0.level == .error })
        #expect(stopped.message == "an instance stopped: its changes could not be committed")
        #expect(stopped.metadata["instance"] == "doomed")
    }
}
