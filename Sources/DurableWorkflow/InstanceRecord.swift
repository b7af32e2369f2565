import Workflow

/// Where an instance is in its life.
public enum InstanceStatus: String, Sendable, Codable, CaseIterable {
    /// Started and not completed: it can be resumed.
    case running
    /// Marked complete by the application; its log is kept until deleted.
    case completed
    /// Replay stopped with an error (unknown action, corrupt entry, divergence); the log is intact.
    case failed
}

/// An instance as listed by the store's index (updated in the same transaction as its log).
public struct InstanceInfo: Sendable, Hashable, Codable {
    /// The id it was started with.
    public let id: String
    /// The root workflow's type name.
    public let workflowType: String
    /// Its status.
    public let status: InstanceStatus
    /// When it was started.
    public let created: WallTime
    /// When its log last grew (or its status changed).
    public let updated: WallTime
    /// The sequence of its last log entry.
    public let lastSequence: UInt64
    /// The sequence of its latest snapshot (0 when none).
    public let lastSnapshot: UInt64
}

/// An instance's index entry. Stored in two places so that a log commit touches one B-tree:
/// the static part (key, type, created) under the id in `instances`, written once; the mutable
/// part (status, updated, last sequence, last snapshot) in `log` under ``stateKey``, next to the
/// instance's newest entries, rewritten with every commit.
struct InstanceRecord {
    var key: UInt64
    var workflowType: String
    var status: InstanceStatus
    var created: WallTime
    var updated: WallTime
    var lastSequence: UInt64
    var lastSnapshot: UInt64
    var owner = InstanceOwner.none
    /// The name of the codec its payloads and states are written with.
    var codec = JSONPayloadCodec.codecName

    /// Where the mutable part lives in the log: after every sequence of the instance, on the page
    /// its commits write anyway.
    var stateKey: LogKey { LogKey(instance: key, sequence: .max) }

    func info(id: String) -> InstanceInfo {
        InstanceInfo(id: id, workflowType: workflowType, status: status, created: created, updated: updated,
                     lastSequence: lastSequence, lastSnapshot: lastSnapshot)
    }

    func encodedStatic() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(2))
        writer.write(key)
        writer.write(created.nanosecondsSinceEpoch)
        writer.write(workflowType)
        writer.write(codec)
        return writer.bytes
    }

    func encodedState() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(1))
        writer.write(UInt8(InstanceStatus.allCases.firstIndex(of: status)!))
        writer.write(updated.nanosecondsSinceEpoch)
        writer.write(lastSequence)
        writer.write(lastSnapshot)
        writer.write(owner.pid)
        writer.write(owner.processStart)
        writer.write(owner.token)
        return writer.bytes
    }

    /// The static part; the mutable fields are zero until ``withState(_:)`` fills them. Version 1
    /// (before codecs were recorded) was always written with JSON.
    static func decodeStatic(_ bytes: UnsafeRawBufferPointer) -> InstanceRecord? {
        var reader = ByteReader(bytes)
        do {
            let version = try reader.read(UInt8.self)
            guard version == 1 || version == 2 else { return nil }
            let key = try reader.read(UInt64.self)
            let created = WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self))
            let type = try reader.readString()
            let codec = version >= 2 ? try reader.readString() : JSONPayloadCodec.codecName
            return InstanceRecord(key: key, workflowType: type, status: .running, created: created, updated: created,
                                  lastSequence: 0, lastSnapshot: 0, codec: codec)
        } catch {
            return nil
        }
    }

    /// This record with the mutable part decoded from `bytes`, or `nil` when they are corrupt.
    func withState(_ bytes: UnsafeRawBufferPointer) -> InstanceRecord? {
        var reader = ByteReader(bytes)
        do {
            guard try reader.read(UInt8.self) == 1 else { return nil }
            let statusIndex = Int(try reader.read(UInt8.self))
            guard statusIndex < InstanceStatus.allCases.count else { return nil }
            var copy = self
            copy.status = InstanceStatus.allCases[statusIndex]
            copy.updated = WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self))
            copy.lastSequence = try reader.read(UInt64.self)
            copy.lastSnapshot = try reader.read(UInt64.self)
            copy.owner = InstanceOwner(
                pid: try reader.read(Int32.self), processStart: try reader.read(UInt64.self), token: try reader.read(UInt64.self))
            return copy
        } catch {
            return nil
        }
    }
}
