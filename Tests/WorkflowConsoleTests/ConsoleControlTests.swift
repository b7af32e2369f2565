import DurableWorkflow
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestSupport
import Testing
import Workflow
import WorkflowConsole
import WorkflowExamples

extension RunningConsole {
    /// POST `body` (JSON) to `path`: its status and the answer as JSON.
    func post(_ path: String, _ body: [String: Any], headers: [String: String] = [:]) async throws -> (status: Int, answer: [String: Any]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await Self.session.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }
}

@Suite("The console's control verbs (--allow-control, with a token)")
struct ConsoleControlTests {
    static let token = "control-token-for-tests"

    @Test("pause and unpause through the API: recorded and applied as wfctl pause applies them, by the host that runs the instance (another process)")
    func pauseRunningInstance() async throws {
        let dir = TemporaryDirectory("console-control")
        // A live host in another process: counter-demo runs instance "counter".
        let demo = try ChildProcess([dir.path], executable: ChildProcess.builtProduct("counter-demo"))
        defer { demo.kill() }
        _ = demo.readLine(until: { $0.hasPrefix("count = 2") }, timeout: .seconds(30))
        let store = try WorkflowStore.open(path: dir.path)
        let console = try await RunningConsole.start(try WorkflowConsole(
            store: store, types: exampleTypes(), configuration: ConsoleConfiguration(port: 0, token: Self.token, allowControl: true)))
        defer { console.stop() }
        let bearer = ["Authorization": "Bearer \(Self.token)"]

        let paused = try await console.post("/api/instances/counter/control", ["verb": "pause", "reason": "incident 7"], headers: bearer)
        #expect(paused.status == 200 && paused.answer["outcome"] as? String == "applied", "\(paused)")
        #expect((paused.answer["answeredBy"] as? String)?.contains("pid \(demo.pid)") == true, "the live host answered: \(paused.answer)")
        #expect(try store.controlState(of: "counter").paused)
        // Paused: the running service applies nothing more.
        let atPause = try #require(try store.instance(id: "counter")).lastSequence
        try await Task.sleep(for: .milliseconds(600))
        #expect(try store.instance(id: "counter")?.lastSequence == atPause)

        let unpaused = try await console.post("/api/instances/counter/control", ["verb": "unpause"], headers: bearer)
        #expect(unpaused.status == 200 && unpaused.answer["outcome"] as? String == "applied", "\(unpaused)")
        _ = demo.readLine(until: { _ in true }, timeout: .seconds(5))
        let requests = try store.controlRequests(of: "counter")
        #expect(requests.map(\.request.verb) == [.pause, .unpause])
        #expect(requests.first?.request.reason == "incident 7")
        #expect(requests.allSatisfy { $0.request.requestedBy.hasPrefix("the console (wfctl serve, pid ") }, "\(requests.map(\.request.requestedBy))")
        // The describe the page shows lists them.
        let described = try await console.json("/api/instances/counter", headers: bearer) as! [String: Any]
        #expect((described["requests"] as! [[String: Any]]).count == 2)

        // A host that does not answer (its process stopped): recorded, not answered in time, a
        // 504 that says so (or 503 when the stop caught it holding the store's writer), not a 500.
        demo.kill(SIGSTOP)
        defer { demo.kill(SIGCONT) }
        let unanswered = try await console.post("/api/instances/counter/control", ["verb": "pause", "reason": "stopped host"], headers: bearer)
        #expect([503, 504].contains(unanswered.status), "\(unanswered)")
    }

    @Test("a change needs the token in the Authorization header (not the cookie, not ?token=), a known verb and an instance that exists")
    func refusals() async throws {
        let dir = TemporaryDirectory("console-control-refusals")
        let store = try makeCounters(dir.path, count: 1)
        let console = try await RunningConsole.start(try WorkflowConsole(
            store: store, configuration: ConsoleConfiguration(port: 0, token: Self.token, allowControl: true)))
        defer { console.stop() }
        let (_, _, headers) = try await console.get("/?token=\(Self.token)")
        let cookie = String(try #require(headers["set-cookie"]).split(separator: ";")[0])
        #expect(try await console.post("/api/instances/c000/control", ["verb": "pause"]).status == 401)
        #expect(try await console.post("/api/instances/c000/control", ["verb": "pause"], headers: ["Cookie": cookie]).status == 403)
        #expect(try await console.post("/api/instances/c000/control?token=\(Self.token)", ["verb": "pause"]).status == 403)
        let bearer = ["Authorization": "Bearer \(Self.token)"]
        #expect(try await console.post("/api/instances/c000/control", ["verb": "explode"], headers: bearer).status == 400)
        #expect(try await console.post("/api/instances/nobody/control", ["verb": "pause"], headers: bearer).status == 404)
        #expect(try store.controlRequests(of: "c000").isEmpty, "nothing refused was recorded")
        // With no live host the console applies it itself, as wfctl does.
        let terminated = try await console.post("/api/instances/c000/control", ["verb": "terminate", "reason": "test"], headers: bearer)
        #expect(terminated.status == 200 && terminated.answer["outcome"] as? String == "applied", "\(terminated)")
        #expect(try store.instance(id: "c000")?.status == .terminated)
    }
}

@Suite("The console's resume of a failed instance, and fork")
struct ConsoleResumeTests {
    @Test("resume marks a failed instance that replays running again, as wfctl resume does; one that still does not replay stays failed (409); fork makes a paused copy")
    func resume() async throws {
        let dir = TemporaryDirectory("console-resume")
        let store = try makeCounters(dir.path, count: 1)
        let entries = try store.entries(of: "c000")
        try store.importInstance(id: "fixed", workflowType: String(reflecting: Counter.self), status: .failed, created: .now(), entries: entries)
        let broken = entries.map { entry in
            entry.sequence != 2 ? entry : LogEntry(
                sequence: 2, time: entry.time, origin: entry.origin, nodePath: entry.nodePath, actionTag: entry.actionTag,
                actionVersion: entry.actionVersion, payload: [0xFF, 0x00, 0x13], digest: entry.digest)
        }
        try store.importInstance(id: "broken", workflowType: String(reflecting: Counter.self), status: .failed, created: .now(), entries: broken)
        let console = try await RunningConsole.start(try WorkflowConsole(
            store: store, types: exampleTypes(), configuration: ConsoleConfiguration(port: 0, token: ConsoleControlTests.token, allowControl: true)))
        defer { console.stop() }
        let bearer = ["Authorization": "Bearer \(ConsoleControlTests.token)"]

        let resumed = try await console.post("/api/instances/fixed/control", ["verb": "resume"], headers: bearer)
        #expect(resumed.status == 200 && resumed.answer["outcome"] as? String == "resumed", "\(resumed)")
        #expect(try store.instance(id: "fixed")?.status == .running)
        let left = try await console.post("/api/instances/broken/control", ["verb": "resume"], headers: bearer)
        #expect(left.status == 409, "\(left)")
        #expect(((left.answer["error"] as? [String: Any])?["message"] as? String)?.contains("still does not replay") == true, "\(left)")
        #expect(try store.instance(id: "broken")?.status == .failed)
        let running = try await console.post("/api/instances/c000/control", ["verb": "resume"], headers: bearer)
        #expect(running.status == 409, "only a failed instance is resumed: \(running)")

        // fork: a paused copy of the first entries, as wfctl fork makes it.
        let forked = try await console.post("/api/instances/c000/control", ["verb": "fork", "at": 4, "as": "c000-at-4"], headers: bearer)
        #expect(forked.status == 200 && forked.answer["outcome"] as? String == "forked" && forked.answer["instance"] as? String == "c000-at-4",
                "\(forked)")
        let copy = try #require(try store.instance(id: "c000-at-4"))
        #expect(copy.status == .paused)
        #expect(try store.entries(of: "c000-at-4", from: 1, through: 4).map(\.payload) == entries.prefix(4).map(\.payload))
        #expect(try await console.post("/api/instances/c000/control", ["verb": "fork", "at": 4, "as": "c000-at-4"], headers: bearer).status == 409)
        #expect(try await console.post("/api/instances/c000/control", ["verb": "fork", "at": 99, "as": "x"], headers: bearer).status == 400)
        #expect(try await console.post("/api/instances/c000/control", ["verb": "fork", "at": 2], headers: bearer).status == 400)
    }
}

@Suite("The console's signal post (--allow-control, with a token)")
struct ConsoleSignalPostTests {
    @Test("a version posted by stable name or id is listed with its value; an idempotency key makes a repeat the same version; bad input is 400")
    func post() async throws {
        let dir = TemporaryDirectory("console-signal-post")
        let store = try makeCounters(dir.path, count: 1)
        let console = try await RunningConsole.start(try WorkflowConsole(
            store: store, configuration: ConsoleConfiguration(port: 0, token: ConsoleControlTests.token, allowControl: true)))
        defer { console.stop() }
        let bearer = ["Authorization": "Bearer \(ConsoleControlTests.token)"]
        let first = try await console.post("/api/signals/post", ["stableName": "upload:a.txt", "value": ["done": true, "note": "<b>x</b>"],
                                                                 "idempotencyKey": "k1"], headers: bearer)
        #expect(first.status == 200 && first.answer["version"] as? Int == 1, "\(first)")
        let again = try await console.post("/api/signals/post", ["stableName": "upload:a.txt", "value": ["done": false], "idempotencyKey": "k1"],
                                           headers: bearer)
        #expect(again.answer["version"] as? Int == 1, "the same key, the same version: \(again)")
        let id = try #require(first.answer["signal"] as? String)
        let detail = try await console.json("/api/signals/\(id)", headers: bearer) as! [String: Any]
        let versions = try #require(detail["versions"] as? [[String: Any]])
        #expect(versions.map { $0["version"] as? Int } == [1], "\(detail)")
        #expect((versions.first?["payload"] as? [String: Any])?["note"] as? String == "<b>x</b>", "\(detail)")
        let byID = try await console.post("/api/signals/post", ["signal": id, "value": 42], headers: bearer)
        #expect(byID.answer["version"] as? Int == 2, "\(byID)")
        // With no consumer, a signal keeps its latest version.
        let after = try await console.json("/api/signals/\(id)", headers: bearer) as! [String: Any]
        #expect((after["signal"] as? [String: Any])?["latestVersion"] as? Int == 2, "\(after)")
        #expect((after["versions"] as? [[String: Any]])?.last?["payload"] as? Int == 42, "\(after)")

        #expect(try await console.post("/api/signals/post", ["value": 1], headers: bearer).status == 400)
        #expect(try await console.post("/api/signals/post", ["signal": "not-a-uuid", "value": 1], headers: bearer).status == 400)
        #expect(try await console.post("/api/signals/post", ["stableName": "x"], headers: bearer).status == 400)
        #expect(try await console.post("/api/signals/post", ["stableName": "x", "value": 1]).status == 401)
        let (_, _, headers) = try await console.get("/?token=\(ConsoleControlTests.token)")
        let cookie = String(try #require(headers["set-cookie"]).split(separator: ";")[0])
        #expect(try await console.post("/api/signals/post", ["stableName": "x", "value": 1], headers: ["Cookie": cookie]).status == 403)
    }
}
