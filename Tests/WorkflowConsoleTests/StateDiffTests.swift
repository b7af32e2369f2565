import Foundation
import Testing
import WorkflowCLI

@Suite("The state diff (wfctl state --diff, the console's time travel)")
struct StateDiffTests {
    static func state(_ sequence: UInt64, _ nodes: [String: String]) throws -> Reports.State {
        let json = try JSONSerialization.data(withJSONObject: [
            "instance": "i", "sequence": sequence, "digest": "0",
            "nodes": nodes.keys.sorted().map { ["path": $0, "state": try JSONSerialization.jsonObject(with: Data(nodes[$0]!.utf8), options: .fragmentsAllowed)] },
        ])
        return try JSONDecoder().decode(Reports.State.self, from: json)
    }

    @Test("field by field: nested objects key by key, arrays index by index, values of another kind as one change; JSON pointers escaped")
    func fields() throws {
        let old = try Self.state(3, ["/Order": #"{"status":"open","items":[{"sku":"a","n":1},{"sku":"b","n":2}],"note":"x","a/b~c":1}"#])
        let new = try Self.state(7, ["/Order": #"{"status":"paid","items":[{"sku":"a","n":3}],"paidAt":"today","a/b~c":{"deep":true}}"#])
        let diff = Reports.diff(from: old, to: new)
        #expect(diff.from == 3 && diff.to == 7 && diff.instance == "i")
        let changes = diff.changes.map { "\($0.change) \($0.node)\($0.field)" }
        #expect(changes == [
            "changed /Order/a~1b~0c",
            "changed /Order/items/0/n",
            "removed /Order/items/1",
            "removed /Order/note",
            "added /Order/paidAt",
            "changed /Order/status",
        ], "\(changes)")
        let status = try #require(diff.changes.first { $0.field == "/status" })
        #expect(status.before == .string("open") && status.after == .string("paid"))
    }

    @Test("nodes that appeared or went are whole changes; identical states have none; a state that is not JSON compares whole")
    func nodes() throws {
        let old = try Self.state(1, ["/Root": "1", "/Root/Child[a]": #"{"x":1}"#])
        let new = try Self.state(2, ["/Root": "1", "/Root/Child[b]": #"{"x":1}"#])
        let changes = Reports.diff(from: old, to: new).changes.map { "\($0.change) \($0.node)\($0.field)" }
        #expect(changes == ["added /Root/Child[b]", "removed /Root/Child[a]"])
        #expect(Reports.diff(from: new, to: new).changes.isEmpty)
        let scalar = Reports.diff(from: try Self.state(1, ["/C": "2"]), to: try Self.state(2, ["/C": "6"])).changes
        #expect(scalar.count == 1 && scalar[0].field == "" && scalar[0].before == .integer(2) && scalar[0].after == .integer(6))
    }
}
