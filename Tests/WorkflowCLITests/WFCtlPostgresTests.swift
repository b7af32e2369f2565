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
        #expect(list.lines.dropFirst().first?.hasPrefix("counter  Counter  running  13") == true, "\(list.lines)")
        #expect(try wfctl(["log", url, "counter", "--json"]).lines.count == 13)
        #expect(try wfctl(["state", url, "counter"]).lines.last == "/Counter  12")
        #expect(try wfctl(["verify", url]).code == 0)

        let missing = try wfctl(["list", url.replacingOccurrences(of: "schema=wf_cli_", with: "schema=wf_none_")])
        #expect(missing.code == 3)
        #expect(missing.lines.joined().contains("holds no workflow store"), "\(missing.lines)")
    }
}
#endif
