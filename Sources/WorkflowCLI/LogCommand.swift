import ArgumentParser
import DurableWorkflow
import Foundation
import Workflow

/// `wfctl log STORE ID`
struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an instance's log: sequence, time, origin, node path, action and decoded payload.",
        discussion: """
        Payloads are shown as JSON when they are JSON, otherwise as a safe hex preview.
        With --follow, entries appended by a running service are printed as they are committed.
        With --json, one JSON object per line.
        Example: wfctl log /var/lib/service/workflows order-42 --from 100 --follow
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "The instance id.")
    var id: String

    @Option(help: "The first sequence to show.")
    var from: UInt64 = 1

    @Option(help: "The last sequence to show.")
    var to: UInt64?

    @Flag(help: "Keep printing entries as they are appended.")
    var follow = false

    struct Line: Codable {
        let sequence: UInt64
        let time: String
        let origin: String
        let node: String
        let action: String
        let version: Int
        let payload: JSONValue?
        let payloadBase64: String
        let digest: String?
    }

    func run() throws {
        let store = try options.open()
        guard let instance = try store.instance(id: id) else {
            throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
        }
        if let to, to > instance.lastSequence || to < from {
            throw ToolError.usage("--to \(to) is outside \(from)...\(instance.lastSequence), the log of \(id)")
        }
        var next = from
        var printedHeader = false
        repeat {
            let last = min(to ?? .max, try store.instance(id: id)?.lastSequence ?? 0)
            if next <= last {
                let entries = try store.entries(of: id, from: next, through: last)
                print(entries, header: !printedHeader)
                printedHeader = true
                next = last + 1
            }
            if follow { Thread.sleep(forTimeInterval: 0.05) }
        } while follow && (to == nil || next <= to!)
    }

    /// An entry's payload as JSON: a control entry's fields (its payload is the engine's own
    /// binary form), else the payload itself when it is JSON or the binary codec's.
    static func payload(of entry: LogEntry) -> JSONValue? {
        if entry.isControl, let control = ControlEntry(entry) {
            return .object(control.fields.mapValues { value in Int64(value).map(JSONValue.integer) ?? .string(value) })
        }
        return JSONValue.parse(entry.payload)
    }

    private func print(_ entries: [LogEntry], header: Bool) {
        if options.json {
            for entry in entries {
                let line = Line(
                    sequence: entry.sequence, time: iso(entry.time), origin: entry.origin.rawValue, node: entry.nodePath.description,
                    action: entry.actionTag, version: entry.actionVersion, payload: Self.payload(of: entry),
                    payloadBase64: Data(entry.payload).base64EncodedString(), digest: entry.digest.map { String($0, radix: 16) })
                emit((try? json(line, pretty: false)) ?? "{}")
            }
            return
        }
        var table = Table("SEQ", "TIME", "ORIGIN", "NODE", "ACTION", "PAYLOAD")
        for entry in entries {
            table.add("\(entry.sequence)", iso(entry.time), entry.origin.rawValue, entry.nodePath.description,
                      entry.isProps ? "props" : "\(entry.actionTag)@\(entry.actionVersion)",
                      entry.isControl ? Self.payload(of: entry).flatMap { try? json($0, pretty: false) } ?? readable(entry.payload) : readable(entry.payload))
        }
        let text = table.text
        emit(header ? text : text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n"))
    }
}
