import DurableWorkflow
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestSupport
import Testing
import WorkflowConsole

@Suite("The console's security: loopback by default, a token where it is exposed, no control without it")
struct ConsoleSecurityTests {
    @Test("another address than loopback without a token, control without a token, an empty token: refused before anything listens")
    func refusedConfigurations() throws {
        let dir = TemporaryDirectory("console-refused")
        let store = try makeCounters(dir.path, count: 1)
        for configuration in [
            ConsoleConfiguration(host: "0.0.0.0"),
            ConsoleConfiguration(host: "10.1.2.3", port: 9000),
            ConsoleConfiguration(allowControl: true),
            ConsoleConfiguration(token: ""),
            ConsoleConfiguration(port: 70_000),
        ] {
            let error = #expect(throws: ConsoleError.self) { try WorkflowConsole(store: store, configuration: configuration) }
            #expect(error?.kind == .invalidConfiguration)
        }
        #expect(throws: Never.self) { try WorkflowConsole(store: store, configuration: ConsoleConfiguration(host: "0.0.0.0", token: "a-long-secret")) }
        #expect(throws: Never.self) { try WorkflowConsole(store: store, configuration: ConsoleConfiguration(host: "::1")) }
    }

    @Test("with a token, every request without it gets 401, page and API alike; the header, ?token= and the page's cookie let it in")
    func token() async throws {
        let dir = TemporaryDirectory("console-token")
        let store = try makeCounters(dir.path, count: 1)
        let token = "s3cret-token-for-tests"
        let console = try await RunningConsole.start(
            try WorkflowConsole(store: store, configuration: ConsoleConfiguration(port: 0, token: token)))
        defer { console.stop() }
        for path in ["/", "/console.js", "/console.css", "/api/store", "/api/instances", "/api/instances/c000", "/api/signals", "/nothing"] {
            #expect(try await console.get(path).status == 401, "\(path) without the token")
            #expect(try await console.get(path, headers: ["Authorization": "Bearer wrong-token-of-same-len"]).status == 401)
            #expect(try await console.get(path + (path.contains("?") ? "&" : "?") + "token=\(token)x").status == 401)
        }
        #expect(try await console.get("/api/instances", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        #expect(try await console.get("/api/instances?token=\(token)").status == 200)
        // The page asked for with the token leaves an HttpOnly, SameSite=Strict cookie that its
        // script's requests carry.
        let (status, _, headers) = try await console.get("/?token=\(token)")
        #expect(status == 200)
        let cookie = try #require(headers["set-cookie"])
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
        let pair = String(cookie.split(separator: ";")[0])
        #expect(try await console.get("/api/store", headers: ["Cookie": pair]).status == 200)
        #expect(try await console.get("/api/store", headers: ["Cookie": "wfctl_console=forged"]).status == 401)
    }

    @Test("without --allow-control no endpoint changes anything: every other method than GET is refused")
    func readOnly() async throws {
        let dir = TemporaryDirectory("console-readonly")
        let store = try makeCounters(dir.path, count: 1)
        let console = try await RunningConsole.start(try WorkflowConsole(store: store, configuration: ConsoleConfiguration(port: 0)))
        defer { console.stop() }
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            for path in ["/api/instances/c000", "/api/instances/c000/cancel", "/api/instances", "/api/signals"] {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(console.port)\(path)")!)
                request.httpMethod = method
                let (_, response) = try await RunningConsole.session.data(for: request)
                let code = (response as! HTTPURLResponse).statusCode
                #expect(code == 404 || code == 405, "\(method) \(path): \(code)")
            }
        }
        #expect(try store.instance(id: "c000")?.status == .running)
        #expect(try store.controlRequests(of: "c000").isEmpty)
    }
}

@Suite("wfctl serve, run as a separate process")
struct ServeCommandTests {
    @Test("serves a store a running counter writes to: the listing follows its log; SIGTERM stops it with 0")
    func servesLiveStore() async throws {
        let dir = TemporaryDirectory("serve-live")
        let demo = try ChildProcess([dir.path], executable: ChildProcess.builtProduct("counter-demo"))
        defer { demo.kill() }
        _ = demo.readLine(until: { $0.hasPrefix("count = 3") }, timeout: .seconds(30))
        let serve = try ChildProcess(["serve", dir.path, "--port", "0"], executable: ChildProcess.builtProduct("wfctl"), mergeStandardError: true)
        defer { serve.kill() }
        let line = try #require(serve.readLine(timeout: .seconds(30)))
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) }, "\(line)")
        let console = RunningConsole(port: port, task: Task {})
        func lastSequence() async throws -> Int {
            let page = try await console.json("/api/instances") as! [String: Any]
            return (page["instances"] as! [[String: Any]]).first { $0["id"] as? String == "counter" }?["lastSequence"] as? Int ?? 0
        }
        let first = try await lastSequence()
        #expect(first >= 4)
        _ = demo.readLine(until: { $0.hasPrefix("count = \(first + 2)") }, timeout: .seconds(30))
        #expect(try await lastSequence() > first, "the listing follows the running service's commits")
        // The shipped wfctl registers Counter: the time travel works on it.
        let state = try await console.json("/api/instances/counter/state?at=3&diff=1") as! [String: Any]
        #expect(((state["diff"] as! [String: Any])["changes"] as! [[String: Any]]).count == 1)
        // The chart's samples: the store's commits counted once a second, growing with the demo's.
        try await Task.sleep(for: .milliseconds(2_500))
        let rates = try await console.json("/api/rates") as! [String: Any]
        let samples = try #require(rates["samples"] as? [[String: Any]], "\(rates)")
        #expect(samples.count >= 2, "\(rates)")
        let transactions = samples.compactMap { ($0["transactions"] as? NSNumber)?.uint64Value }
        #expect(transactions.count == samples.count && transactions.last! > transactions.first!, "\(samples)")
        serve.kill(SIGTERM)
        #expect(try serve.waitForExit(timeout: .seconds(30)) == 0)
    }

    /// A process of its own holding the console's event stream open on `port`, as a page does
    /// (python3, which tools/test has for the browser test): once it printed `open`.
    private func openEventStream(port: Int) throws -> ChildProcess {
        let script = """
            import socket, sys, time
            connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            connection.sendall(b"GET /api/events HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
            print("open" if b"text/event-stream" in connection.recv(4096) else "refused", flush=True)
            time.sleep(600)
            """
        let page = try ChildProcess(["python3", "-c", script, "\(port)"], executable: "/usr/bin/env", mergeStandardError: true)
        #expect(page.readLine() == "open")
        return page
    }

    /// Whether the console still answers on `port` of loopback.
    private func listens(_ port: Int) async -> Bool {
        (try? await RunningConsole(port: port, task: Task {}).get("/api/store")) != nil
    }

    @Test("SIGTERM stops it at once while a page holds the event stream; SIGKILL of the wfctl started leaves no server behind")
    func stopsWithOpenStream() async throws {
        let dir = TemporaryDirectory("serve-stop")
        _ = try makeCounters(dir.path, count: 2)
        func serve() throws -> (ChildProcess, Int) {
            let serve = try ChildProcess(["serve", dir.path, "--port", "0"], executable: ChildProcess.builtProduct("wfctl"), mergeStandardError: true)
            let line = try #require(serve.readLine(timeout: .seconds(30)))
            return (serve, try #require(line.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) }, "\(line)"))
        }
        let (first, firstPort) = try serve()
        let page = try openEventStream(port: firstPort)
        defer { page.kill() }
        let stopped = ContinuousClock.now
        first.kill(SIGTERM)
        #expect(try first.waitForExit(timeout: .seconds(30)) == 0)
        #expect(ContinuousClock.now - stopped < .seconds(5), "SIGTERM took \(ContinuousClock.now - stopped) with a page open")

        let (second, secondPort) = try serve()
        #expect(await listens(secondPort))
        second.kill()
        _ = try second.waitForExit()
        let deadline = ContinuousClock.now + .seconds(5)
        while await listens(secondPort), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!(await listens(secondPort)), "the server outlived the wfctl that was killed")
    }

    @Test("a path that is no store, or an exposed address without a token: a clear message and a non-zero exit, before listening")
    func refused() throws {
        let dir = TemporaryDirectory("serve-refused")
        let missing = try wfctl(["serve", dir.child("nothing-here"), "--port", "0"])
        #expect(missing.code == 3, "\(missing.lines)")
        #expect(missing.lines.joined().contains("is not a store"), "\(missing.lines)")
        try Data("not a store at all".utf8).write(to: URL(fileURLWithPath: dir.child("garbage")))
        let garbage = try wfctl(["serve", dir.child("garbage"), "--port", "0"])
        #expect(garbage.code == 3, "\(garbage.lines)")
        _ = try makeCounters(dir.child("store"), count: 1)
        let exposed = try wfctl(["serve", dir.child("store"), "--host", "0.0.0.0", "--port", "0"])
        #expect(exposed.code != 0 && exposed.lines.joined().contains("--token"), "\(exposed.lines)")
    }
}
