import DurableWorkflow
import Foundation
import InMemoryTracing
import TestSupport
import Testing
import Workflow
import WorkflowExamples
import WorkflowLMDB
import WorkflowLocks
import WorkflowSignals
import WorkflowStorage

/// The JSON object `wfctl ... --json` printed.
private func object(_ output: (code: Int32, lines: [String])) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(output.lines.joined().utf8)) as? [String: Any], "\(output.lines)")
}

@Suite("wfctl for operators: describe, cancel, delete, resume, signal post, JSON errors")
struct WFCtlOperatorTests {
    @Test("describe of an instance whose replay fails shows its record and why its waits are unknown, and exits 1 (a finding)")
    func describeUnreplayable() throws {
        let dir = TemporaryDirectory("cli-describe-bad")
        try makeCounterStore(dir.path, id: "counter", increments: 3, snapshotEvery: nil)
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let entries = try store.entries(of: "counter").map { entry in
                entry.sequence != 3 ? entry : LogEntry(
                    sequence: 3, time: entry.time, origin: entry.origin, nodePath: entry.nodePath, actionTag: "no.such.action",
                    actionVersion: entry.actionVersion, payload: entry.payload, digest: entry.digest)
            }
            try store.importInstance(id: "bad", workflowType: String(reflecting: Counter.self), status: .running, created: .now(), entries: entries)
            try store.close()
        }
        let text = try wfctl(["describe", dir.path, "bad"])
        #expect(text.code == 1, "\(text.lines)")
        let lines = text.lines.joined(separator: "\n")
        #expect(lines.contains("bad") && lines.contains("running") && lines.contains("waits: unknown: replaying the instance fails"), "\(lines)")
        #expect(lines.contains("no.such.action"), "\(lines)")
        let json = try wfctl(["describe", dir.path, "bad", "--json"])
        #expect(json.code == 1)
        let report = try object((json.code, json.lines.filter { !$0.hasPrefix("wfctl:") }))
        #expect((report["waitsError"] as? String)?.contains("no.such.action") == true, "\(report)")
        #expect((report["instance"] as? [String: Any])?["id"] as? String == "bad")
    }

    @Test("describe shows the record and what the instance waits for: a timer with its deadline, a signal, workers with their idempotency keys")
    func describe() throws {
        let dir = TemporaryDirectory("cli-describe")
        let confirmation = SignalID()
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "test")
            for (id, files) in [("waiting", [String: Int]()), ("uploading", ["a.txt": 600_000])] {
                let job = UploadJob(job: id, files: files, confirmation: confirmation, holdSeconds: 3600)
                let host = try center.store.start(job, id: id, configuration: UploadJob.configuration(center: center))
                host.rendering.begin.send(.init())
                host.stop()
            }
            try center.stop()
        }
        try makeCounterStore(dir.path, id: "plain", increments: 2, snapshotEvery: nil)

        let waiting = try object(try wfctl(["describe", dir.path, "waiting", "--json"]))
        #expect((waiting["instance"] as? [String: Any])?["status"] as? String == "running")
        #expect(waiting["waitsKnown"] as? Bool == true)
        let waits = try #require(waiting["waits"] as? [[String: Any]])
        #expect(Set(waits.compactMap { $0["kind"] as? String }) == ["signal", "timer"])
        let signal = try #require(waits.first { $0["kind"] as? String == "signal" })
        #expect(signal["signal"] as? String == "\(confirmation)")
        let timer = try #require(waits.first { $0["kind"] as? String == "timer" })
        #expect(timer["key"] as? String == "hold" && (timer["due"] as? String)?.isEmpty == false)
        #expect((timer["idempotencyKey"] as? String)?.hasPrefix("waiting~") == true)

        let uploading = try wfctl(["describe", dir.path, "uploading"])
        #expect(uploading.code == 0)
        #expect(uploading.lines.contains { $0.contains("status") && $0.contains("running") })
        #expect(uploading.lines.contains { $0.contains("worker") && $0.contains("uploading~") && $0.contains("/UploadJob/FileUpload[a.txt]#") },
                "\(uploading.lines)")
        #expect(uploading.lines.contains { $0.contains("timer") && $0.contains("hold") && $0.contains("due ") })

        let plain = try wfctl(["describe", dir.path, "plain"])
        #expect(plain.lines.last == "waits: nothing", "\(plain.lines)")
    }

    @Test("cancel and delete reach an instance whose host runs in another process (this one), which applies them; without a live host wfctl applies them at once")
    func cancelAndDelete() async throws {
        let dir = TemporaryDirectory("cli-cancel")
        try makeCounterStore(dir.path, id: "a", increments: 2, snapshotEvery: nil)
        try makeCounterStore(dir.path, id: "b", increments: 2, snapshotEvery: nil)
        try makeCounterStore(dir.path, id: "c", increments: 2, snapshotEvery: nil)
        // No live host runs "a": wfctl ends it itself, logged like a host would.
        let cancelled = try object(try wfctl(["cancel", dir.path, "a", "--reason", "support", "--json"]))
        #expect(cancelled["outcome"] as? String == "applied")
        #expect(cancelled["status"] as? String == "running")
        #expect((cancelled["answeredBy"] as? String)?.contains("no live host") == true, "\(cancelled)")
        #expect(try wfctl(["list", dir.path, "--status", "cancelled"]).lines.contains { $0.hasPrefix("a ") })
        let store = try WorkflowStore.open(path: dir.path)
        let error = #expect(throws: DurableError.self) {
            _ = try store.resume(id: "a", as: Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
        }
        #expect(error?.kind == .instanceCancelled)
        #expect(try store.entries(of: "a").last?.actionTag == ControlEntry.terminateTag)

        // "b" and "c" run here: wfctl's requests reach this process's hosts, which apply them.
        let b = try store.resume(id: "b", as: Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
        let c = try store.resume(id: "c", as: Counter.self, configuration: DurableConfiguration(actions: Counter.actions))
        let deleted = try wfctl(["delete", dir.path, "b"])
        #expect(deleted.code == 0 && deleted.lines.first?.hasPrefix("deleted b, by host of pid \(getpid())") == true, "\(deleted.lines)")
        #expect(try store.instance(id: "b") == nil)
        await b.stopAndWait()
        let cancel = try wfctl(["cancel", dir.path, "c"])
        #expect(cancel.code == 0 && cancel.lines.first?.hasPrefix("cancelled c as entry 4, by host of pid \(getpid())") == true, "\(cancel.lines)")
        await c.stopAndWait()
        #expect(try store.instance(id: "c")?.status == .cancelled)
        // A rerun is refused, and says why (exit 1).
        let again = try wfctl(["cancel", dir.path, "c"])
        #expect(again.code == 1 && again.lines.last?.contains("has ended") == true, "\(again.lines)")
    }

    @Test("bulk verbs take every instance their filters select; --dry-run lists exactly those; a rerun is a no-op; describe shows a pause and the requests")
    func bulkVerbs() throws {
        let dir = TemporaryDirectory("cli-bulk")
        for id in ["a", "b", "c", "d", "e"] { try makeCounterStore(dir.path, id: id, increments: 2, snapshotEvery: nil) }
        do {
            let store = try WorkflowStore.open(path: dir.path)
            _ = try store.backend.setStatus(id: "d", to: .failed, at: WallTime.now().nanosecondsSinceEpoch, failure: "unknownActionType: no decoder")
            try store.complete(id: "e")
            try store.close()
        }
        func rows(_ arguments: [String]) throws -> [[String: Any]] {
            let output = try wfctl(arguments + ["--json"])
            return try #require(try JSONSerialization.jsonObject(with: Data(output.lines.joined().utf8)) as? [[String: Any]], "\(output.lines)")
        }
        // No id and no filter: nothing is taken by default.
        #expect(try wfctl(["pause", dir.path]).code == 2)
        let planned = try rows(["pause", dir.path, "--type", "Counter", "--dry-run"])
        #expect(planned.map { $0["instance"] as? String } == ["a", "b", "c"])
        #expect(planned.allSatisfy { $0["outcome"] as? String == "would-pause" })
        #expect(try wfctl(["list", dir.path, "--status", "paused"]).lines.count == 1, "a dry run changes nothing")
        let paused = try rows(["pause", dir.path, "--type", "Counter", "--reason", "incident 7"])
        #expect(paused.map { $0["outcome"] as? String } == ["applied", "applied", "applied"])
        #expect(try rows(["pause", dir.path, "--type", "Counter"]).isEmpty, "the rerun finds none running")
        let described = try wfctl(["describe", dir.path, "a"]).lines
        #expect(described.contains { $0.hasPrefix("status") && $0.hasSuffix("paused") } && described.contains { $0.hasPrefix("paused ") })
        #expect(described.contains { $0.hasPrefix("1 ") && $0.contains("pause") && $0.contains("applied") }, "\(described)")

        #expect(try rows(["unpause", dir.path, "--type", "Counter"]).count == 3)
        #expect(try rows(["unpause", dir.path, "--type", "Counter"]).isEmpty)
        let failed = try rows(["cancel", dir.path, "--status", "failed", "--kind", "unknownActionType"])
        #expect(failed.map { $0["instance"] as? String } == ["d"] && failed.first?["outcome"] as? String == "applied")
        let old = try rows(["delete", dir.path, "--status", "completed", "--updated-before", "0s", "--dry-run"])
        #expect(old.map { $0["instance"] as? String } == ["e"])
        #expect(try rows(["terminate", dir.path, "--updated-after", "1h"]).map { $0["instance"] as? String } == ["a", "b", "c"])
        #expect(try rows(["terminate", dir.path, "--updated-after", "1h"]).isEmpty)
        let log = try wfctl(["log", dir.path, "a"]).lines
        #expect(log.contains { $0.contains("$pause@1") && $0.contains(#""request":1"#) }, "\(log)")
    }

    @Test("resume marks a failed instance running once it replays; one that still does not replay stays failed (exit 1)")
    func resumeFailed() throws {
        let dir = TemporaryDirectory("cli-resume")
        try makeCounterStore(dir.path, id: "fixed", increments: 3, snapshotEvery: nil)
        let store = try WorkflowStore.open(path: dir.path)
        _ = try store.backend.setStatus(id: "fixed", to: .failed, at: 1)
        let good = try store.entries(of: "fixed")
        let bad = LogEntry(sequence: 2, time: good[1].time, origin: good[1].origin, nodePath: good[1].nodePath,
                           actionTag: good[1].actionTag, actionVersion: 7, payload: good[1].payload, digest: nil)
        try store.importInstance(id: "broken", workflowType: String(reflecting: Counter.self), status: .failed, created: .now(),
                                 entries: [good[0], bad])

        let resumed = try wfctl(["resume", dir.path, "fixed"])
        #expect(resumed.code == 0, "\(resumed.lines)")
        #expect(try store.instance(id: "fixed")?.status == .running)
        let broken = try wfctl(["resume", dir.path, "broken"])
        #expect(broken.code == 1 && broken.lines.first?.contains("still does not replay") == true, "\(broken.lines)")
        #expect(try store.instance(id: "broken")?.status == .failed)
        #expect(try wfctl(["resume", dir.path, "fixed"]).code == 2)
    }

    @Test("signal post writes a version another process's consumer can read; bad JSON is a usage error")
    func signalPost() throws {
        let dir = TemporaryDirectory("cli-signal-post")
        let signal = SignalID()
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "test")
            try center.register(signal, owner: "test consumer", behaviour: .untilTerminated)
            try center.stop()
        }
        let posted = try object(try wfctl(["signal", "post", dir.path, "\(signal)", #"{"carrier":"DHL"}"#, "--json"]))
        #expect(posted["version"] as? Int == 1)
        #expect(try wfctl(["signal", "post", dir.path, "\(signal)", #""again""#, "--idempotency-key", "k"]).lines == ["posted version 2 of \(signal)"])
        #expect(try wfctl(["signal", "post", dir.path, "\(signal)", #""again""#, "--idempotency-key", "k"]).lines == ["posted version 2 of \(signal)"])
        #expect(try wfctl(["signal", "post", dir.path, "\(signal)", "{not json"]).code == 2)
        let center = try SignalCenter.open(path: dir.path, processIdentity: "reader")
        defer { try? center.stop() }
        #expect(try center.signals().first { $0.id == signal }?.latestVersion == 2)
    }

    @Test("stable names: wfctl signals shows the name a wait or a post gave; signal post --stable-name reaches the signal's consumer")
    func signalStableNames() async throws {
        let dir = TemporaryDirectory("cli-signal-names")
        let waited = SignalID(stableName: "shipment:order-7"), anonymous = SignalID()
        let center = try SignalCenter.open(path: dir.path, processIdentity: "consumer")
        defer { try? center.stop() }
        let consumer = try center.register(waited, owner: "order-7")
        _ = try center.register(anonymous, owner: "order-8")
        let delivered = Lock<[String]>([])
        center.attach(consumer, handler: .atLeastOnce { delivery in
            delivered.withLock { $0.append(String(decoding: delivery.payload, as: UTF8.self)) }
        })

        let list = try wfctl(["signals", dir.path])
        #expect(list.code == 0 && list.lines.first?.contains("NAME") == true, "\(list.lines)")
        #expect(list.lines.contains { $0.hasPrefix(waited.description) && $0.contains("shipment:order-7") }, "\(list.lines)")
        #expect(list.lines.contains { $0.hasPrefix(anonymous.description) && $0.contains(" - ") }, "\(list.lines)")

        // Kept consumers: a terminating version would remove the consumer, and the record and its name with it.
        let posted = try wfctl(["signal", "post", dir.path, "--stable-name", "shipment:order-7", #"{"carrier":"DHL"}"#, "--keep-consumers"])
        #expect(posted.lines == ["posted version 1 of \(waited) (shipment:order-7)"], "\(posted.lines)")
        let deadline = ContinuousClock.now + .seconds(10)
        while delivered.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(delivered.withLock { $0 } == [#"{"carrier":"DHL"}"#])

        let records = try JSONSerialization.jsonObject(with: Data(try wfctl(["signals", dir.path, "--json"]).lines.joined().utf8)) as? [[String: Any]]
        let named = records?.first { $0["id"] as? String == waited.description }
        #expect(named?["name"] as? String == "shipment:order-7" && named?["latestVersion"] as? Int == 1, "\(String(describing: records))")
        #expect(records?.first { $0["id"] as? String == anonymous.description }?["name"] == nil)
        let detail = try wfctl(["signals", dir.path, "--stable-name", "shipment:order-7"])
        #expect(detail.lines.first == "signal \(waited) (shipment:order-7): latest version 1", "\(detail.lines)")
        #expect(try wfctl(["signals", dir.path, waited.description, "--stable-name", "shipment:order-7"]).code == 2)
        #expect(try wfctl(["signal", "post", dir.path, "--stable-name", "x", "1", "2"]).code == 2)
    }

    @Test("signal post --trace-context: the versions carry the given trace context, and a consumer's delivery span joins that trace")
    func signalPostTraceContext() async throws {
        let dir = TemporaryDirectory("cli-signal-trace")
        let signal = SignalID()
        let tracer = InMemoryTracer()
        let center = try SignalCenter.open(path: dir.path, processIdentity: "traced consumer", configuration: SignalConfiguration(tracer: tracer))
        defer { try? center.stop() }
        let consumer = try center.register(signal, owner: "test consumer")
        let delivered = Lock<[TraceContext]>([])
        center.attach(consumer, handler: .atLeastOnce { delivery in delivered.withLock { $0.append(delivery.traceContext) } })

        // The fields a tracer of the operator's side injected (here the in-memory tracer's own).
        let posted = try wfctl([
            "signal", "post", dir.path, "\(signal)", "1",
            "--trace-context", "\(InMemoryTracer.traceIDKey)=trace-42", "--trace-context", "\(InMemoryTracer.spanIDKey)=span-42",
        ])
        #expect(posted.code == 0, "\(posted.lines)")
        // The delivery's span ends after the handler returns, once the delivery is marked: wait for it.
        func deliverySpans() -> [FinishedInMemorySpan] { tracer.finishedSpans.filter { $0.operationName == "workflow.signal.deliver" } }
        let deadline = ContinuousClock.now + .seconds(10)
        while delivered.withLock({ $0.isEmpty }) || deliverySpans().isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        // wfctl has no tracer: the version carries the context as it was given.
        #expect(delivered.withLock { $0 } == [TraceContext([InMemoryTracer.traceIDKey: "trace-42", InMemoryTracer.spanIDKey: "span-42"])])
        let spans = deliverySpans()
        #expect(spans.count == 1 && spans.first?.traceID == "trace-42" && spans.first?.parentSpanID == "span-42", "\(spans)")

        let malformed = try wfctl(["signal", "post", dir.path, "\(signal)", "2", "--trace-context", "traceparent"])
        #expect(malformed.code == 2 && malformed.lines.contains { $0.contains("NAME=VALUE") }, "\(malformed.lines)")
    }

    @Test("with --json, an error is a JSON object on standard output with the exit code")
    func jsonErrors() throws {
        let dir = TemporaryDirectory("cli-json-error")
        try makeCounterStore(dir.path, id: "c", increments: 1, snapshotEvery: nil)
        let missing = try wfctl(["describe", dir.path, "nobody", "--json"])
        #expect(missing.code == 2)
        let error = try #require(try object(missing)["error"] as? [String: Any])
        #expect(error["exitCode"] as? Int == 2)
        #expect((error["message"] as? String)?.contains("no instance \"nobody\"") == true)
    }
}

@Suite("wfctl progress on long commands")
struct WFCtlProgressTests {
    @Test("verify shows its progress on a terminal's stderr (as export and import do), and nothing when stderr is not one")
    func progress() throws {
        let dir = TemporaryDirectory("cli-progress")
        for index in 0..<3 { try makeCounterStore(dir.path, id: "c\(index)", increments: 2, snapshotEvery: nil) }
        // Not a terminal (a pipe): the output is the table alone.
        let piped = try wfctl(["verify", dir.path])
        #expect(!piped.lines.joined().contains("verified instances"))
        // On a terminal (script(1) gives the command a pseudo-terminal): the progress line, then cleared.
        let wfctlPath = ChildProcess.builtProduct("wfctl")
        let child = try ChildProcess(["-qec", "\(wfctlPath) verify \(dir.path)", "/dev/null"], executable: "/usr/bin/script",
                                     mergeStandardError: true)
        let text = child.readRemainingLines().joined(separator: "\n")
        #expect(try child.waitForExit() == 0, "\(text)")
        #expect(text.contains("verified instances: 1 of 3"), "\(text)")
        #expect(text.contains("c2") && text.contains("ok"))
    }
}
