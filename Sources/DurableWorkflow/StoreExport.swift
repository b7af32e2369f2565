import Foundation
import Workflow
import WorkflowStorage

/// One line of an export (`wfctl export`, JSON lines; docs/wfctl-json.md): an instance's header,
/// one of its entries, or one of its snapshots. Everything a store holds of an instance is in
/// its lines, so an import gives a copy that resumes, verifies and gates (rule V3) as the
/// original does.
public struct ExportLine: Codable, Sendable, Hashable {
    /// `instance`, `entry` or `snapshot`.
    public let kind: String
    /// The instance the line belongs to.
    public let instance: String
    // Instance lines.
    public var workflowType: String?
    public var status: InstanceStatus?
    public var created: Int64?
    /// The code version the instance started under.
    public var codeVersion: String?
    /// The codec its payloads and states are written with.
    public var codec: String?
    // Entry and snapshot lines.
    public var sequence: UInt64?
    // Entry lines.
    public var time: Int64?
    public var origin: ActionOrigin?
    public var path: [NodePath.Segment]?
    public var tag: String?
    public var version: Int?
    /// The payload, base64.
    public var payload: String?
    public var digest: UInt64?
    /// The entry's notes (version markers, state versions, declared workers), when it has any.
    public var notes: Notes?
    /// A snapshot's stored bytes, base64.
    public var snapshot: String?

    /// ``EntryNotes`` as an export line holds them.
    public struct Notes: Codable, Sendable, Hashable {
        public var versionMarkers: [String: Int]?
        public var stateVersions: [String: Int]?
        public var declaredWorkers: [String: Int]?
        public var declaresAllWorkers: Bool?
    }

    public init(kind: String, instance: String) {
        self.kind = kind
        self.instance = instance
    }

    /// The line of an instance's header.
    init(header instance: StoredInstance) {
        self.init(kind: "instance", instance: instance.id)
        workflowType = instance.workflowType
        status = instance.status
        created = instance.created
        codeVersion = instance.codeVersion
        codec = instance.codec
    }

    /// The line of `entry` of `instance`.
    init(entry: LogEntry, of instance: String) {
        self.init(kind: "entry", instance: instance)
        sequence = entry.sequence
        time = entry.time.nanosecondsSinceEpoch
        origin = entry.origin
        path = entry.nodePath.segments
        tag = entry.actionTag
        version = entry.actionVersion
        payload = Data(entry.payload).base64EncodedString()
        digest = entry.digest
        if !entry.notes.isEmpty {
            let noted = entry.notes
            notes = Notes(versionMarkers: noted.versionMarkers.isEmpty ? nil : noted.versionMarkers,
                          stateVersions: noted.stateVersions.isEmpty ? nil : noted.stateVersions,
                          declaredWorkers: noted.declaredWorkers.isEmpty && !noted.declaresAllWorkers ? nil : noted.declaredWorkers,
                          declaresAllWorkers: noted.declaresAllWorkers ? true : nil)
        }
    }

    /// The log entry of an entry line; `nil` when a field is missing.
    var entry: LogEntry? {
        guard kind == "entry", let sequence, let time, let origin, let path, let tag, let version,
              let payload = payload.flatMap({ Data(base64Encoded: $0) }) else { return nil }
        let noted = notes.map {
            EntryNotes(versionMarkers: $0.versionMarkers ?? [:], stateVersions: $0.stateVersions ?? [:],
                       declaredWorkers: $0.declaredWorkers ?? [:], declaresAllWorkers: $0.declaresAllWorkers ?? false)
        } ?? EntryNotes()
        return LogEntry(sequence: sequence, time: WallTime(nanosecondsSinceEpoch: time), origin: origin, nodePath: NodePath(segments: path),
                        actionTag: tag, actionVersion: version, payload: Array(payload), digest: digest, notes: noted)
    }
}

/// Why export lines cannot be imported.
public struct ExportLineError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the line.
    public let description: String
}

extension WorkflowStore {
    /// The export of instance `id`: its header, every entry, then every snapshot (oldest first).
    public func exportLines(of id: String) throws -> [ExportLine] {
        guard let record = try record(id: id) else { throw notFound(id) }
        var lines = [ExportLine(header: record)]
        try visitEntries(record: record, id: id, from: 1, through: record.lastSequence) { view in
            lines.append(ExportLine(entry: view.entry, of: id))
        }
        var snapshots: [ExportLine] = []
        if record.lastSnapshot > 0 {
            do {
                try backend.readSnapshots(of: record.key, atMost: record.lastSequence) { sequence, bytes in
                    var line = ExportLine(kind: "snapshot", instance: id)
                    line.sequence = sequence
                    line.snapshot = Data(bytes).base64EncodedString()
                    snapshots.append(line)
                    return true
                }
            } catch let failure as StorageFailure {
                throw DurableError.storage(failure, store: path, instance: id)
            }
        }
        return lines + snapshots.sorted { ($0.sequence ?? 0) < ($1.sequence ?? 0) }
    }

    /// Imports the instances of `lines` (an export, in its order: each instance's header before
    /// its entries and snapshots), each with its log, snapshots and code version, as the store
    /// that exported it held them; returns their ids in order. Nothing is claimed: the instances
    /// keep their status, and a service resumes the running ones as it would after a restart.
    @discardableResult
    public func importLines(_ lines: some Sequence<ExportLine>) throws -> [String] {
        var headers: [String: ExportLine] = [:]
        var order: [String] = []
        var entries: [String: [LogEntry]] = [:]
        var snapshots: [String: [(UInt64, [UInt8])]] = [:]
        for (index, line) in lines.enumerated() {
            switch line.kind {
            case "instance":
                guard line.workflowType != nil else { throw ExportLineError(description: "line \(index + 1): an instance without its type") }
                if headers[line.instance] == nil { order.append(line.instance) }
                headers[line.instance] = line
            case "entry":
                guard let entry = line.entry else { throw ExportLineError(description: "line \(index + 1): an entry with missing fields") }
                entries[line.instance, default: []].append(entry)
            case "snapshot":
                guard let sequence = line.sequence, let bytes = line.snapshot.flatMap({ Data(base64Encoded: $0) }) else {
                    throw ExportLineError(description: "line \(index + 1): a snapshot with missing fields")
                }
                snapshots[line.instance, default: []].append((sequence, Array(bytes)))
            default:
                throw ExportLineError(description: "line \(index + 1): an unknown kind \"\(line.kind)\"")
            }
        }
        for id in order {
            let header = headers[id]!
            try importInstance(
                id: id, workflowType: header.workflowType!, status: header.status ?? .running,
                created: WallTime(nanosecondsSinceEpoch: header.created ?? 0), entries: entries[id] ?? [], codec: header.codec,
                codeVersion: header.codeVersion)
            for (sequence, bytes) in snapshots[id] ?? [] {
                try storageCall(instance: id) { () throws(StorageFailure) in try backend.putSnapshot(id: id, sequence: sequence, bytes: bytes) }
            }
        }
        return order
    }
}

extension WorkflowStore {
    /// The version markers instance `id` has fixed, as its log records them (its first entry's,
    /// and those it reached later): marker name to version. A marker it has not fixed takes
    /// version 1 where its logged entries reach it.
    public func versionMarkers(of id: String) throws -> [String: Int] {
        guard let record = try record(id: id) else { throw notFound(id) }
        var markers: [String: Int] = [:]
        try visitEntries(record: record, id: id, from: 1, through: record.lastSequence) { entry in
            if !entry.notes.versionMarkers.isEmpty { markers.merge(entry.notes.versionMarkers) { $1 } }
        }
        // The engine's own (`$names`, how the instance names its nodes) are not the build's markers.
        return markers.filter { !$0.key.hasPrefix("$") }
    }
}
