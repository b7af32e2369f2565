import Workflow

/// The payload of a control entry (rule O2), in the engine's own binary form (any codec's
/// instance reads it, and tools read it without the workflow types): what a control request did
/// to the instance, and which request it was.
///
/// | tag | payload after the format byte (1) and the request's number (UInt64, 0: the engine's own) |
/// | --- | --- |
/// | `$cancel` | a flag byte (1: reason, 2: deadline), the reason, requestedAt and the deadline (Int64 ns) |
/// | `$terminate` | how it ended (1 cancelled, 2 terminated, 3 deleted), a flag byte (1: reason), the reason |
/// | `$pause`, `$unpause` | a flag byte (1: reason), the reason |
public struct ControlEntry: Sendable, Hashable {
    /// The control entries' tags.
    public static let cancelTag = "$cancel"
    public static let terminateTag = "$terminate"
    public static let pauseTag = "$pause"
    public static let unpauseTag = "$unpause"
    static let tags: Set<String> = [cancelTag, terminateTag, pauseTag, unpauseTag]

    /// The control request's number within its instance (0: the engine's own, as the end of a
    /// cancel request at its deadline).
    public let request: UInt64
    /// What it does.
    package let effect: ControlEntryEffect
    /// Why, for a pause or an unpause (a cancel's and an end's reason are in their effect).
    public let reason: String?

    package init(request: UInt64, effect: ControlEntryEffect, reason: String? = nil) {
        self.request = request
        self.effect = effect
        switch effect {
        case .pause, .unpause: self.reason = reason
        case .cancel(let request): self.reason = request.reason
        case .end(.cancelled(let reason)), .end(.terminated(let reason)): self.reason = reason
        case .end(.deleted): self.reason = nil
        }
    }

    /// The entry's tag.
    public var tag: String {
        switch effect {
        case .cancel: Self.cancelTag
        case .end: Self.terminateTag
        case .pause: Self.pauseTag
        case .unpause: Self.unpauseTag
        }
    }

    /// The instance's status from this entry on, when it changes it.
    var status: InstanceStatus? {
        switch effect {
        case .cancel: nil
        case .end(.cancelled): .cancelled
        case .end(.terminated): .terminated
        case .end(.deleted): .terminated
        case .pause: .paused
        case .unpause: .running
        }
    }

    /// The stored payload.
    var payload: [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt8(1))
        writer.write(request)
        switch effect {
        case .cancel(let request):
            writer.write(UInt8((request.reason == nil ? 0 : 1) | (request.deadline == nil ? 0 : 2)))
            if let reason = request.reason { writer.write(reason) }
            writer.write(request.requestedAt.nanosecondsSinceEpoch)
            if let deadline = request.deadline { writer.write(deadline.nanosecondsSinceEpoch) }
        case .end(let ending):
            let (kind, reason): (UInt8, String?) = switch ending {
            case .cancelled(let reason): (1, reason)
            case .terminated(let reason): (2, reason)
            case .deleted: (3, nil)
            }
            writer.write(kind)
            writer.write(UInt8(reason == nil ? 0 : 1))
            if let reason { writer.write(reason) }
        case .pause, .unpause:
            writer.write(UInt8(reason == nil ? 0 : 1))
            if let reason { writer.write(reason) }
        }
        return writer.bytes
    }

    /// The entry `tag` with `payload` stands for, or `nil` when they do not decode.
    static func decode(tag: String, payload: UnsafeRawBufferPointer) -> ControlEntry? {
        var reader = ByteReader(payload)
        do {
            guard try reader.read(UInt8.self) == 1 else { return nil }
            let number = try reader.read(UInt64.self)
            let effect: ControlEntryEffect
            switch tag {
            case cancelTag:
                let flags = try reader.read(UInt8.self)
                let reason = flags & 1 != 0 ? try reader.readString() : nil
                let requestedAt = WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self))
                let deadline = flags & 2 != 0 ? WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self)) : nil
                effect = .cancel(CancellationRequest(reason: reason, requestedAt: requestedAt, deadline: deadline))
            case terminateTag:
                let kind = try reader.read(UInt8.self)
                let reason = try reader.read(UInt8.self) & 1 != 0 ? try reader.readString() : nil
                switch kind {
                case 1: effect = .end(.cancelled(reason: reason))
                case 2: effect = .end(.terminated(reason: reason))
                case 3: effect = .end(.deleted)
                default: return nil
                }
            case pauseTag, unpauseTag:
                let reason = try reader.read(UInt8.self) & 1 != 0 ? try reader.readString() : nil
                guard reader.remaining == 0 else { return nil }
                return ControlEntry(request: number, effect: tag == pauseTag ? .pause : .unpause, reason: reason)
            default: return nil
            }
            guard reader.remaining == 0 else { return nil }
            return ControlEntry(request: number, effect: effect)
        } catch {
            return nil
        }
    }

    /// The entry of a ``LogEntry`` whose tag is a control tag, or `nil`.
    public init?(_ entry: LogEntry) {
        guard let decoded = entry.payload.withUnsafeBytes({ Self.decode(tag: entry.actionTag, payload: $0) }) else { return nil }
        self = decoded
    }

    /// What tools show of it: `{"request": 3, "reason": "...", "deadline": ...}` as text fields.
    public var fields: [String: String] {
        var fields = ["request": "\(request)"]
        switch effect {
        case .cancel(let cancellation):
            if let reason = cancellation.reason { fields["reason"] = reason }
            fields["requestedAt"] = "\(cancellation.requestedAt)"
            if let deadline = cancellation.deadline { fields["deadline"] = "\(deadline)" }
        case .end(let ending):
            fields["ending"] = "\(ending)"
        case .pause, .unpause:
            if let reason { fields["reason"] = reason }
        }
        return fields
    }
}
