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

/// The stored form of an instance's index entry.
struct InstanceRecord {
    var key: UInt64
    var workflowType: String
    var status: InstanceStatus
    var created: WallTime
    var updated: WallTime
    var lastSequence: UInt64
    var lastSnapshot: UInt64

    func info(id: String) -> InstanceInfo {
        InstanceInfo(id: id, workflowType: workflowType, status: status, created: created, updated: updated,
                     lastSequence: lastSequence, lastSnapshot: lastSnapshot)
    }

    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(1))
        writer.write(key)
        writer.write(UInt8(InstanceStatus.allCases.firstIndex(of: status)!))
        writer.write(created.nanosecondsSinceEpoch)
        writer.write(updated.nanosecondsSinceEpoch)
        writer.write(lastSequence)
        writer.write(lastSnapshot)
        writer.write(workflowType)
        return writer.bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> InstanceRecord? {
        var reader = ByteReader(bytes)
        do {
            guard try reader.read(UInt8.self) == 1 else { return nil }
            let key = try reader.read(UInt64.self)
            let statusIndex = Int(try reader.read(UInt8.self))
            guard statusIndex < InstanceStatus.allCases.count else { return nil }
            return InstanceRecord(
                key: key, workflowType: "", status: InstanceStatus.allCases[statusIndex],
                created: WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self)),
                updated: WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self)),
                lastSequence: try reader.read(UInt64.self), lastSnapshot: try reader.read(UInt64.self)
            ).with(workflowType: try reader.readString())
        } catch {
            return nil
        }
    }

    private func with(workflowType: String) -> InstanceRecord {
        var copy = self
        copy.workflowType = workflowType
        return copy
    }
}
