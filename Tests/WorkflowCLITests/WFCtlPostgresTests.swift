#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import Testing
import WorkflowExamples
import WorkflowPostgres

/// The test server's URL (tools/test starts one), with a schema no other test uses.
private func freshStoreURL() -> String? {
    guard let server = ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"] else { return nil }
    return server + "?schema=wf_cli_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
}

@Suite("wfctl on a PostgreSQL store", .enabled(if: ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"] != nil))
struct WFCtlPostgresTests {
    @Test("info, list, log, state and verify read a PostgreSQL store named by its URL; a schema without a store is an error")
    func readCommands() throws {
        let url = try #require(freshStoreURL())
        do {
            let store = try WorkflowStore.open(try #require(PostgresConfiguration(url: url)))
            let host = try store.start(Counter(), id: "counter", configuration: DurableConfiguration(actions: Counter.actions, snapshotEvery: 5))
            for _ in 0..<12 { host.rendering.increment.send(Counter.Increment()) }
            host.stop()
        }
        let info = try wfctl(["info", url])
        #expect(info.code == 0, "\(info.lines)")
        #expect(info.lines.contains { $0.hasPrefix("instances") && $0.hasSuffix(" 1") }, "\(info.lines)")
        #expect(info.lines.contains { $0.hasPrefix("log entries") && $0.hasSuffix(" 13") }, "\(info.lines)")
        let list = try wfctl(["list", url])
        #expect(list.lines.dropFirst().first?.hasPrefix("counter  Counter  running  -        13") == true, "\(list.lines)")
        #expect(try wfctl(["log", url, "counter", "--json"]).lines.count == 13)
        #expect(try wfctl(["state", url, "counter"]).lines.last == "/Counter  12")
        #expect(try wfctl(["verify", url]).code == 0)

        let missing = try wfctl(["list", url.replacingOccurrences(of: "schema=wf_cli_", with: "schema=wf_none_")])
        #expect(missing.code == 3)
        #expect(missing.lines.joined().contains("holds no workflow store"), "\(missing.lines)")
    }

    @Test("the hosts demo: two hosts share four instances; when one is killed, the other takes its instances over")
    func hostsDemo() async throws {
        let url = try #require(freshStoreURL())
        let demo = ChildProcess.builtProduct("hosts-demo")
        let create = try ChildProcess(["create", url, "4"], executable: demo, mergeStandardError: true)
        #expect(create.readRemainingLines() == ["created 4 instances, held by no host"])
        #expect(try create.waitForExit() == 0)
        let a = try ChildProcess(["host", url, "machine-a"], executable: demo, mergeStandardError: true)
        let b = try ChildProcess(["host", url, "machine-b"], executable: demo, mergeStandardError: true)
        defer {
            a.kill()
            b.kill()
        }
        // Both run until every order is taken, then a dies.
        var taken: Set<String> = []
        let start = ContinuousClock.now
        while taken.count < 4, ContinuousClock.now - start < .seconds(20) {
            for host in [a, b] {
                while let line = host.readLine(timeout: .milliseconds(20)) {
                    if line.contains("took over") { taken.insert(String(line.split(separator: " ")[3])) }
                }
            }
        }
        #expect(taken.count == 4, "taken: \(taken)")
        a.kill()
        _ = try a.waitForExit()
        let line = b.readLine(until: { $0.hasPrefix("machine-b: runs") && $0.split(separator: " ").count == 6 }, timeout: .seconds(10))
        #expect(line != nil, "machine-b runs all four orders after machine-a died")
        let list = try ChildProcess(["list", url], executable: demo, mergeStandardError: true)
        let held = list.readRemainingLines()
        #expect(held.count == 4 && held.allSatisfy { $0.hasSuffix("held by pid \(b.pid)") }, "\(held)")
        _ = try list.waitForExit()
    }
}
#endif
