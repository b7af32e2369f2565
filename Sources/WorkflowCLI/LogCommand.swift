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

    func run() throws {
        let store = try options.open()
        let instance = try Reports.existing(store, id: id)
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

    private func print(_ entries: [LogEntry], header: Bool) {
        if options.json {
            for entry in entries { emit((try? json(Reports.logLine(entry), pretty: false)) ?? "{}") }
            return
        }
        var table = Table("SEQ", "TIME", "ORIGIN", "NODE", "ACTION", "PAYLOAD")
        for entry in entries {
            table.add("\(entry.sequence)", iso(entry.time), entry.origin.rawValue, entry.nodePath.description,
                      entry.isProps ? "props" : "\(entry.actionTag)@\(entry.actionVersion)",
                      entry.isControl ? Reports.payload(of: entry).flatMap { try? json($0, pretty: false) } ?? readable(entry.payload) : readable(entry.payload))
        }
        let text = table.text
        emit(header ? text : text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n"))
    }
}
