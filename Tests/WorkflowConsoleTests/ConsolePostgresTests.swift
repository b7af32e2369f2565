#if Postgres
import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowConsole
import WorkflowExamples
import WorkflowPostgres

enum ConsolePostgres {
    static let url = ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"]
}

@Suite("The console over a PostgreSQL store", .enabled(if: ConsolePostgres.url != nil))
struct ConsolePostgresTests {
    @Test("the same API over PostgreSQL: pages in byte order, a status filter, describe, the log and the state with its diff")
    func postgres() async throws {
        var configuration = try #require(PostgresConfiguration(url: ConsolePostgres.url!))
        configuration.schema = "wf_console_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let store = try WorkflowStore.open(configuration)
        defer { try? store.close() }
        let first = try store.start(Counter(), id: "c000", configuration: DurableConfiguration(actions: Counter.actions))
        for _ in 0..<6 { first.rendering.increment.send(Counter.Increment()) }
        await first.stopAndWait()
        let entries = try store.entries(of: "c000")
        // Ids whose byte order differs from an English collation's ("B" before "a").
        let ids = ["c000", "B-1", "a-2", "é-3", "Z-4"] + (5..<25).map { String(format: "c%03d", $0) }
        for (index, id) in ids.enumerated().dropFirst() {
            try store.importInstance(id: id, workflowType: String(reflecting: Counter.self), status: index % 2 == 1 ? .completed : .running,
                                     created: .now(), entries: entries)
        }
        let console = try await RunningConsole.start(
            try WorkflowConsole(store: store, types: exampleTypes(), configuration: ConsoleConfiguration(port: 0)))
        defer { console.stop() }

        var seen: [String] = []
        var after: String?
        repeat {
            let query = "/api/instances?limit=7" + (after.map { "&after=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! } ?? "")
            let page = try await console.json(query) as! [String: Any]
            seen += (page["instances"] as! [[String: Any]]).map { $0["id"] as! String }
            after = page["next"] as? String
        } while after != nil
        #expect(seen == ids.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }, "\(seen)")
        let completed = try await console.json("/api/instances?status=completed&limit=100") as! [String: Any]
        #expect((completed["instances"] as! [[String: Any]]).count == 12)

        let described = try await console.json("/api/instances/c000") as! [String: Any]
        #expect((described["instance"] as! [String: Any])["lastSequence"] as? Int == 7)
        let log = try await console.json("/api/instances/c000/log?from=6") as! [String: Any]
        #expect((log["entries"] as! [[String: Any]]).map { $0["sequence"] as! Int } == [6, 7])
        let state = try await console.json("/api/instances/c000/state?at=6&diff=2") as! [String: Any]
        let change = try #require(((state["diff"] as! [String: Any])["changes"] as! [[String: Any]]).first)
        #expect(change["before"] as? Int == 1 && change["after"] as? Int == 5)
        let counted = try await console.json("/api/summary") as! [String: Any]
        #expect((counted["counts"] as? [String: Int])?["completed"] == 12 && counted["total"] as? Int == ids.count, "\(counted)")
        let summary = try await console.json("/api/store") as! [String: Any]
        #expect(summary["backend"] as? String == "PostgreSQL" && summary["instances"] as? Int == ids.count, "\(summary)")
        #expect(!(summary["location"] as! String).contains("password"))
    }
}
#endif
