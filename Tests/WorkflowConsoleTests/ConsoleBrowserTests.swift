import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowExamples

/// Where the browser test is: `WORKFLOW_TEST_BROWSER=1` (tools/test sets it once Chromium, its
/// driver and Selenium, Firefox ESR and marionette-driver are installed) makes it run, and fail
/// if anything it needs is missing; `WORKFLOW_TEST_BROWSERS` says in which browsers (tools/test:
/// `chromium firefox`; by default Chromium alone).
enum BrowserTest {
    static let enabled = ProcessInfo.processInfo.environment["WORKFLOW_TEST_BROWSER"] == "1"
    static let browsers: [String] = (ProcessInfo.processInfo.environment["WORKFLOW_TEST_BROWSERS"] ?? "chromium")
        .split(separator: " ").map(String.init)
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var script: String { packageRoot.appendingPathComponent("tools/lib/console-browser-test.py").path }
    /// Screenshots: `WORKFLOW_TEST_ARTIFACTS/console`, else `.build/test-artifacts/console`
    /// (Chromium's; another browser's in `console-BROWSER`).
    static func artifacts(_ browser: String) -> String {
        let root = ProcessInfo.processInfo.environment["WORKFLOW_TEST_ARTIFACTS"] ?? packageRoot.appendingPathComponent(".build/test-artifacts").path
        return root + (browser == "chromium" ? "/console" : "/console-\(browser)")
    }
}

@Suite("The console in a real browser (headless Chromium with Selenium, headless Firefox with Marionette)", .enabled(if: BrowserTest.enabled))
struct ConsoleBrowserTests {
    @Test("list, filter, one instance through time with wfctl's diff, markup shown as text, live updates from another process, pause and unpause of its instance",
          arguments: BrowserTest.browsers)
    func browser(_ name: String) throws {
        let dir = TemporaryDirectory("console-browser")
        let store = try makeCounters(dir.path, count: 30, increments: 8)
        // A payload that holds markup (the log shows payloads as they are).
        let markup = try store.entries(of: "c000").map { entry in
            entry.sequence != 2 ? entry : LogEntry(
                sequence: 2, time: entry.time, origin: entry.origin, nodePath: entry.nodePath, actionTag: entry.actionTag,
                actionVersion: entry.actionVersion,
                payload: Array(#"{"note":"<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"}"#.utf8), digest: entry.digest)
        }
        try store.importInstance(id: "markup/<script>", workflowType: String(reflecting: Counter.self), status: .running, created: .now(),
                                 entries: markup)
        // "counter": the instance counter-demo (another process) appends to while the pages are open.
        let demo = try ChildProcess([dir.path], executable: ChildProcess.builtProduct("counter-demo"))
        defer { demo.kill() }
        _ = demo.readLine(until: { $0.hasPrefix("count = 2") }, timeout: .seconds(30))

        let diff = try wfctl(["state", dir.path, "c000", "--at", "7", "--diff", "3", "--json"])
        #expect(diff.code == 0, "\(diff.lines)")
        let expected = dir.child("expected-diff.json")
        try Data(diff.lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: expected))

        func serve(_ options: [String]) throws -> (child: ChildProcess, port: Int) {
            let child = try ChildProcess(["serve", dir.path, "--port", "0"] + options, executable: ChildProcess.builtProduct("wfctl"),
                                         mergeStandardError: true)
            let line = try #require(child.readLine(timeout: .seconds(30)))
            return (child, try #require(line.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) }, "\(line)"))
        }
        let reading = try serve([])
        defer { reading.child.kill() }
        let token = "browser-test-token"
        let controlling = try serve(["--allow-control", "--token", token])
        defer { controlling.child.kill() }

        let browser = try ChildProcess(
            [BrowserTest.script, "http://127.0.0.1:\(reading.port)", BrowserTest.artifacts(name), expected,
             "http://127.0.0.1:\(controlling.port)/?token=\(token)", name],
            executable: "/usr/bin/env", mergeStandardError: true)
        var lines: [String] = []
        while let line = browser.readLine(timeout: .seconds(120)) {
            lines.append(line)
            print("\(name): \(line)")
        }
        #expect(try browser.waitForExit(timeout: .seconds(60)) == 0, "\(lines.suffix(8).joined(separator: "\n"))")
        #expect(lines.last == "done", "\(lines.suffix(3))")
        #expect(FileManager.default.fileExists(atPath: BrowserTest.artifacts(name) + "/console-instance.png"))
    }
}
