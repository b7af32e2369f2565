import ArgumentParser
import DurableWorkflow
import Foundation
import Workflow
import WorkflowLMDB

/// `wfctl export STORE [ID] > file.jsonl`
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write instances with their logs, snapshots and code versions as JSON lines (a lossless copy of each).",
        discussion: """
        An import of the lines resumes, verifies and gates (`wfctl verify --gate`) as the store did.
        Example: wfctl export /var/lib/service/workflows order-42 > order-42.jsonl
        """)

    @Argument(help: "The store: its directory, or a postgres:// URL.")
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
            for line in try store.exportLines(of: instance.id) { emit(try json(line, pretty: false)) }
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

    @Flag(help: "Print one summary line instead of a line per instance.")
    var quiet = false

    func run() throws {
        let store = try openStore(store, readOnly: false)
        var reading = Progress("read lines:", total: nil)
        let lines = try readExportLines { reading.advance() }
        reading.finish()
        let imported: [String]
        do {
            imported = try store.importLines(lines)
        } catch let error as ExportLineError {
            throw ToolError.usage("the input: \(error)")
        }
        let entries = Dictionary(grouping: lines.filter { $0.kind == "entry" }, by: \.instance).mapValues(\.count)
        guard !quiet else {
            let total = imported.reduce(0) { $0 + (entries[$1] ?? 0) }
            emit("imported \(imported.count) instance\(imported.count == 1 ? "" : "s"), \(total) entries")
            return
        }
        for id in imported { emit("imported \(id): \(entries[id] ?? 0) entries") }
    }
}

/// The export lines of standard input (an empty line is skipped).
func readExportLines(onLine: () -> Void = {}) throws -> [ExportLine] {
    var lines: [ExportLine] = []
    var number = 0
    while let line = readLine(strippingNewline: true) {
        number += 1
        onLine()
        guard !line.isEmpty else { continue }
        guard let item = try? JSONDecoder().decode(ExportLine.self, from: Data(line.utf8)) else {
            throw ToolError.usage("line \(number) of the input is not an export line")
        }
        lines.append(item)
    }
    return lines
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
        abstract: "Create a paused copy of an instance whose log is its first N entries (to reproduce an incident, or rerun a step).",
        discussion: """
        The copy is created paused, with an entry saying where it came from: no service resumes it and none of its tasks
        calls anything until you unpause it (`wfctl unpause`). --into writes it into another store (a scratch store).
        --replace-payload gives the entry at --at a new payload (JSON of its action): the step runs again, by replay,
        with that input; an instance written with the binary codec needs its workflow type registered in this tool.
        Example: wfctl fork /var/lib/service/workflows order-42 --at 17 --as order-42-at-17 --into /tmp/scratch
        Example: wfctl fork /var/lib/service/workflows order-42 --at 5 --as order-42-retry --replace-payload '{"amount": 250}'
        """)

    @Argument(help: "The store: its directory, or a postgres:// URL.")
    var store: String

    @Argument(help: "The instance to fork.")
    var id: String

    @Option(help: "The last sequence the new instance keeps.")
    var at: UInt64

    @Option(name: .customLong("as"), help: "The new instance's id.")
    var newID: String

    @Option(help: "Another store to write the copy into (a directory, or a postgres:// URL).")
    var into: String?

    @Option(help: "The new payload of the entry at --at, as JSON of its action.")
    var replacePayload: String?

    func run() throws {
        let source = try openStore(store, readOnly: into != nil)
        let target = try into.map { try openStore($0, readOnly: false) }
        var replacement: ForkReplacement?
        if let replacePayload {
            guard let instance = try source.instance(id: id) else {
                throw ToolError.usage("no instance \"\(id)\" in \(source.path); list them with `wfctl list \(source.path)`")
            }
            if let support = WorkflowTool.types.support(for: instance.workflowType) {
                replacement = .json(replacePayload, actions: try support.configuration(source).actions)
            } else if (try? JSONSerialization.jsonObject(with: Data(replacePayload.utf8), options: [.fragmentsAllowed])) != nil,
                      try source.entries(of: id, from: 1, through: 1).first?.payload.first != BinaryPayloadCodec.marker {
                replacement = .payload(Array(replacePayload.utf8))
            } else {
                throw ToolError.usage("--replace-payload needs \(instance.workflowType) registered in this tool (its instances use the binary codec), and valid JSON")
            }
        }
        try source.fork(id: id, at: at, as: newID, into: target, replacing: replacement)
        emit("forked \(id) at sequence \(at) as \(newID)\(into.map { " in \($0)" } ?? ""), paused: `wfctl unpause` runs it")
    }
}
