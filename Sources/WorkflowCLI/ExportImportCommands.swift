import ArgumentParser
import DurableWorkflow
import Foundation
import Workflow
import WorkflowLMDB

/// One line of an export: an instance header, or one of its entries.
struct ExportLine: Codable {
    let kind: String
    let instance: String
    // Instance lines.
    var workflowType: String?
    var status: InstanceStatus?
    var created: Int64?
    // Entry lines.
    var sequence: UInt64?
    var time: Int64?
    var origin: ActionOrigin?
    var path: [NodePath.Segment]?
    var tag: String?
    var version: Int?
    var payload: String?
    var digest: UInt64?
}

/// `wfctl export STORE [ID] > file.jsonl`
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write instances and their logs as JSON lines (a lossless copy of each log).",
        discussion: "Example: wfctl export /var/lib/service/workflows order-42 > order-42.jsonl")

    @Argument(help: "The store's directory.")
    var store: String

    @Argument(help: "Only this instance.")
    var id: String?

    func run() throws {
        let store = try openStore(store, readOnly: true)
        let instances = try id.map { id in
            guard let instance = try store.instance(id: id) else { throw ToolError.usage("no instance \"\(id)\" in \(store.path)") }
            return [instance]
        } ?? store.instances()
        var progress = Progress("exported instances:", total: instances.count)
        defer { progress.finish() }
        for instance in instances {
            defer { progress.advance() }
            emit(try json(ExportLine(kind: "instance", instance: instance.id, workflowType: instance.workflowType,
                                     status: instance.status, created: instance.created.nanosecondsSinceEpoch), pretty: false))
            for entry in try store.entries(of: instance.id) {
                emit(try json(ExportLine(
                    kind: "entry", instance: instance.id, sequence: entry.sequence, time: entry.time.nanosecondsSinceEpoch,
                    origin: entry.origin, path: entry.nodePath.segments, tag: entry.actionTag, version: entry.actionVersion,
                    payload: Data(entry.payload).base64EncodedString(), digest: entry.digest), pretty: false))
            }
        }
    }
}

/// `wfctl import STORE < file.jsonl`
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read instances exported with `wfctl export` from standard input into a store.",
        discussion: "Example: wfctl import /var/lib/service/restored < order-42.jsonl")

    @Argument(help: "The store's directory (created if missing).")
    var store: String

    func run() throws {
        let store = try openStore(store, readOnly: false)
        var headers: [String: ExportLine] = [:]
        var order: [String] = []
        var entries: [String: [LogEntry]] = [:]
        var lineNumber = 0
        var reading = Progress("read lines:", total: nil)
        while let line = readLine(strippingNewline: true) {
            lineNumber += 1
            reading.advance()
            guard !line.isEmpty else { continue }
            guard let item = try? JSONDecoder().decode(ExportLine.self, from: Data(line.utf8)) else {
                throw ToolError.usage("line \(lineNumber) of the input is not an export line")
            }
            if item.kind == "instance" {
                headers[item.instance] = item
                order.append(item.instance)
            } else if let sequence = item.sequence, let time = item.time, let origin = item.origin, let path = item.path,
                      let tag = item.tag, let version = item.version, let payload = item.payload.flatMap({ Data(base64Encoded: $0) }) {
                entries[item.instance, default: []].append(LogEntry(
                    sequence: sequence, time: WallTime(nanosecondsSinceEpoch: time), origin: origin, nodePath: NodePath(segments: path),
                    actionTag: tag, actionVersion: version, payload: Array(payload), digest: item.digest))
            } else {
                throw ToolError.usage("line \(lineNumber) is an entry with missing fields")
            }
        }
        reading.finish()
        var progress = Progress("imported instances:", total: order.count)
        defer { progress.finish() }
        for id in order {
            defer { progress.advance() }
            guard let header = headers[id], let type = header.workflowType else { continue }
            try store.importInstance(
                id: id, workflowType: type, status: header.status ?? .running,
                created: WallTime(nanosecondsSinceEpoch: header.created ?? 0), entries: entries[id] ?? [])
            emit("imported \(id): \(entries[id]?.count ?? 0) entries")
        }
    }
}

/// `wfctl compact STORE DEST`
struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a compacting copy of the store (LMDB files never shrink in place).",
        discussion: "Example: wfctl compact /var/lib/service/workflows /var/lib/service/workflows.compact")

    @Argument(help: "The store's directory.")
    var store: String

    @Argument(help: "The directory to write the copy into (created if missing, must be empty).")
    var destination: String

    func run() throws {
        let store = try openStore(store, readOnly: true)
        try store.compactCopy(to: destination)
        let before = (try? FileManager.default.attributesOfItem(atPath: store.path + "/data.mdb"))?[.size] as? Int ?? 0
        let after = (try? FileManager.default.attributesOfItem(atPath: destination + "/data.mdb"))?[.size] as? Int ?? 0
        emit("compacted \(store.path) (\(size(before))) into \(destination) (\(size(after)))")
    }
}

/// `wfctl fork STORE ID --at N --as NEWID`
struct Fork: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a new instance whose log is the first N entries of another (to reproduce an incident).",
        discussion: "Example: wfctl fork /var/lib/service/workflows order-42 --at 17 --as order-42-at-17")

    @Argument(help: "The store's directory.")
    var store: String

    @Argument(help: "The instance to fork.")
    var id: String

    @Option(help: "The last sequence the new instance keeps.")
    var at: UInt64

    @Option(name: .customLong("as"), help: "The new instance's id.")
    var newID: String

    func run() throws {
        let store = try openStore(store, readOnly: false)
        try store.fork(id: id, at: at, as: newID)
        emit("forked \(id) at sequence \(at) as \(newID)")
    }
}
