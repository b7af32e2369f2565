import Foundation
import Workflow

/// One entry of an instance's log (rule D1): what was applied, to which node, when, from where,
/// and optionally a digest of the whole tree's state after it (rule D4).
public struct LogEntry: Sendable, Hashable {
    /// Dense, per instance, starting at 1.
    public let sequence: UInt64
    /// When it was applied (actions see this time as `ApplyContext.now`, also in replay).
    public let time: WallTime
    /// Where it came from.
    public let origin: ActionOrigin
    /// The node it was applied to (the root for props entries).
    public let nodePath: NodePath
    /// The action's type tag; ``LogEntry/propsTag`` for props entries.
    public let actionTag: String
    /// The version of the action's encoding.
    public let actionVersion: Int
    /// The encoded action (or root workflow, for props entries).
    public let payload: [UInt8]
    /// A digest of every node's path and state after the entry's render pass, when recorded.
    public let digest: UInt64?
    /// What the entry records about the build that wrote it (version markers decided at it,
    /// state versions changed from it on); empty for almost every entry.
    public let notes: EntryNotes

    /// The tag of entries that carry new root props.
    public static let propsTag = "$props"

    /// Whether this entry carries root props rather than an action.
    public var isProps: Bool { actionTag == Self.propsTag }
    /// The tag of an acknowledgement of root outputs (its payload: the sequence acknowledged up
    /// to, 8 bytes little-endian; origin `ActionOrigin.acknowledgement`).
    public static let acknowledgementTag = "$ack"
    /// Whether this entry acknowledges root outputs instead of logging an action.
    public var isAcknowledgement: Bool { actionTag == Self.acknowledgementTag }
    /// Whether this entry is a control entry (rule O2: `$cancel`, `$terminate`, `$pause`,
    /// `$unpause`; origin `ActionOrigin.control`, its payload a ``ControlEntry``).
    public var isControl: Bool { ControlEntry.tags.contains(actionTag) }

    /// Creates an entry; the engine makes these as it records.
    public init(
        sequence: UInt64, time: WallTime, origin: ActionOrigin, nodePath: NodePath, actionTag: String,
        actionVersion: Int, payload: [UInt8], digest: UInt64?, notes: EntryNotes = EntryNotes()
    ) {
        self.notes = notes
        self.sequence = sequence
        self.time = time
        self.origin = origin
        self.nodePath = nodePath
        self.actionTag = actionTag
        self.actionVersion = actionVersion
        self.payload = payload
        self.digest = digest
    }

    // MARK: Binary form

    /// The entry format written today for an entry without notes: 2 (a ``WordChecksum``);
    /// format 1 (FNV-1a) is still read.
    package static let currentFormat: UInt8 = 2
    /// The format of an entry with notes: format 2 with a block of ``EntryNotes`` after the
    /// digest (flag 2 of the second byte). Builds that read up to format 2 refuse these entries
    /// alone, so entries without notes stay readable to them (a rollback).
    package static let notedFormat: UInt8 = 3

    /// The bytes stored in the log: a versioned binary record ending in a checksum over the
    /// record and its sequence, so torn, flipped or misplaced bytes are detected. `format` is for
    /// tests of older stores (an entry with notes is always written in ``notedFormat``).
    package func encoded(format: UInt8 = LogEntry.currentFormat) -> [UInt8] {
        let target = Self.targetBytes(nodePath: nodePath, actionTag: actionTag, actionVersion: actionVersion)
        let noted = notes.isEmpty ? nil : notes.encoded()
        let size = Self.recordSize(targetCount: target.count, payloadCount: payload.count, hasDigest: digest != nil, notesCount: noted?.count)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = target.withUnsafeBytes { target in
                payload.withUnsafeBytes { payload in
                    Self.withNotes(noted) { notes in
                        Self.writeRecord(
                            into: UnsafeMutableRawPointer(buffer.baseAddress!), format: format, sequence: sequence, time: time,
                            origin: origin, target: target, payload: payload, digest: digest, notes: notes)
                    }
                }
            }
            precondition(count == size, "log entry size miscounted")
        }
    }

    /// `body` with the bytes of encoded notes, or `nil` for none.
    static func withNotes<R>(_ notes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard let notes else { return body(nil) }
        return notes.withUnsafeBytes { body($0) }
    }

    /// The part of a record that names its target: the node path's segments, the action tag and
    /// its version. Consecutive entries of a commit share it, so a commit makes it once per
    /// target and copies it into each record.
    static func targetBytes(nodePath: NodePath, actionTag: String, actionVersion: Int) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(UInt16(nodePath.segments.count))
        for segment in nodePath.segments {
            writer.write(segment.workflowType)
            writer.write(segment.key)
        }
        writer.write(actionTag)
        writer.write(UInt32(actionVersion))
        return writer.bytes
    }

    /// The size of the record of an entry with a target of `targetCount` bytes (and notes of
    /// `notesCount` bytes, when it has notes).
    static func recordSize(targetCount: Int, payloadCount: Int, hasDigest: Bool, notesCount: Int? = nil) -> Int {
        3 + 8 + (hasDigest ? 8 : 0) + (notesCount.map { 4 + $0 } ?? 0) + targetCount + 4 + payloadCount + 8
    }

    /// Writes the record of an entry with these fields to `base`, which has room for
    /// ``recordSize(targetCount:payloadCount:hasDigest:notesCount:)`` bytes (a commit writes straight into
    /// space reserved in the map, from a payload it encoded into a reused buffer); returns the
    /// bytes written.
    static func writeRecord(
        into base: UnsafeMutableRawPointer, format: UInt8 = LogEntry.currentFormat, sequence: UInt64, time: WallTime,
        origin: ActionOrigin, target: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, digest: UInt64?,
        notes: UnsafeRawBufferPointer? = nil
    ) -> Int {
        var writer = RawWriter(base)
        writer.write(notes == nil ? format : notedFormat)
        writer.write(UInt8(digest == nil ? 0 : 1) | (notes == nil ? 0 : 2))
        writer.write(origin.logCode)
        writer.write(time.nanosecondsSinceEpoch)
        if let digest { writer.write(digest) }
        if let notes { writer.write(block: notes) }
        writer.write(bytes: target)
        writer.write(block: payload)
        writer.write(checksum(writer.written, sequence: sequence, format: notes == nil ? format : notedFormat) ?? 0)
        return writer.offset
    }

    /// The checksum of a record of `format` (without its last 8 bytes); `nil` for an unknown format.
    private static func checksum(_ record: UnsafeRawBufferPointer, sequence: UInt64, format: UInt8) -> UInt64? {
        switch format {
        case 2, 3:
            return WordChecksum.of(record, sequence: sequence)
        case 1:
            var checksum = FNV1a64()
            checksum.combine(record)
            withUnsafeBytes(of: sequence.littleEndian) { checksum.combine($0) }
            return checksum.value
        default:
            return nil
        }
    }

    /// What consecutive entries usually share: the node path and the action tag. Decoding with a
    /// cache reuses the previous entry's values when their bytes repeat, so replaying a long log
    /// for one node allocates no strings for them.
    struct DecodingCache {
        var pathBytes: [UInt8] = []
        var path = NodePath(segments: [])
        var tagBytes: [UInt8] = []
        var tag = ""

        mutating func path(_ bytes: UnsafeRawBufferPointer, decode: () throws(ByteReader.Truncated) -> NodePath) throws(ByteReader.Truncated) -> NodePath {
            if !Self.same(bytes, pathBytes) {
                path = try decode()
                pathBytes = Array(bytes)
            }
            return path
        }

        mutating func tag(_ bytes: UnsafeRawBufferPointer) -> String {
            if !Self.same(bytes, tagBytes) {
                tag = String(decoding: bytes, as: UTF8.self)
                tagBytes = Array(bytes)
            }
            return tag
        }

        private static func same(_ bytes: UnsafeRawBufferPointer, _ known: [UInt8]) -> Bool {
            guard bytes.count == known.count else { return false }
            return bytes.isEmpty || known.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
        }
    }

    /// Decodes the stored bytes of entry `sequence`; `nil` when they are corrupt.
    package static func decode(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> LogEntry? {
        var cache = DecodingCache()
        return decode(bytes, sequence: sequence, cache: &cache)
    }

    /// Decodes the stored bytes of entry `sequence`, reusing what it shares with the entry decoded
    /// before with `cache`; `nil` when they are corrupt.
    static func decode(_ bytes: UnsafeRawBufferPointer, sequence: UInt64, cache: inout DecodingCache) -> LogEntry? {
        View.decode(bytes, sequence: sequence, cache: &cache)?.entry
    }

    /// An entry read in place: its payload points into the LMDB map and is valid only while the
    /// read transaction it came from is open (replay decodes it there, without a copy).
    struct View {
        let sequence: UInt64
        let time: WallTime
        let origin: ActionOrigin
        let nodePath: NodePath
        let actionTag: String
        let actionVersion: Int
        let payload: UnsafeRawBufferPointer
        let digest: UInt64?
        let notes: EntryNotes

        var isProps: Bool { actionTag == LogEntry.propsTag }
        var isAcknowledgement: Bool { actionTag == LogEntry.acknowledgementTag }
        /// Whether it is a control entry (a `$` tag of ``ControlEntry``: one compare for every other entry).
        var isControl: Bool { actionTag.utf8.first == UInt8(ascii: "$") && ControlEntry.tags.contains(actionTag) }

        /// A copy that outlives the transaction.
        var entry: LogEntry {
            LogEntry(sequence: sequence, time: time, origin: origin, nodePath: nodePath, actionTag: actionTag,
                     actionVersion: actionVersion, payload: Array(payload), digest: digest, notes: notes)
        }

        /// Reads the stored bytes of entry `sequence` (checksum first), reusing the node path and
        /// tag of the entry read before through `cache`; `nil` when they are corrupt.
        static func decode(_ bytes: UnsafeRawBufferPointer, sequence: UInt64, cache: inout DecodingCache) -> View? {
            guard bytes.count > 8 else { return nil }
            let record = UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - 8)])
            let stored = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
            // A flipped format byte picks the other algorithm (or none): the checksum still fails.
            guard let computed = LogEntry.checksum(record, sequence: sequence, format: bytes[0]), computed == stored else { return nil }
            var reader = ByteReader(record)
            do {
                let format = try reader.read(UInt8.self)  // checked with the checksum
                let flags = try reader.read(UInt8.self)
                // Format 3 is format 2 with notes, flag 2 of this byte: one without the other is damage.
                guard flags & ~3 == 0, (flags & 2 != 0) == (format == LogEntry.notedFormat) else { return nil }
                guard let origin = ActionOrigin(logCode: try reader.read(UInt8.self)) else { return nil }
                let time = WallTime(nanosecondsSinceEpoch: try reader.read(Int64.self))
                let digest: UInt64? = flags & 1 != 0 ? try reader.read(UInt64.self) : nil
                var notes = EntryNotes()
                if flags & 2 != 0 {
                    let start = reader.offset + 4
                    try reader.skipBlock()
                    guard let decoded = EntryNotes.decode(reader.bytes(from: start)) else { return nil }
                    notes = decoded
                }
                let pathStart = reader.offset
                let segmentCount = Int(try reader.read(UInt16.self))
                for _ in 0..<segmentCount {
                    try reader.skipBlock()
                    try reader.skipBlock()
                }
                let path = try cache.path(reader.bytes(from: pathStart)) { () throws(ByteReader.Truncated) -> NodePath in
                    var pathReader = ByteReader(reader.bytes(from: pathStart))
                    _ = try pathReader.read(UInt16.self)
                    var segments: [NodePath.Segment] = []
                    segments.reserveCapacity(segmentCount)
                    for _ in 0..<segmentCount {
                        segments.append(.init(workflowType: try pathReader.readString(), key: try pathReader.readString()))
                    }
                    return NodePath(segments: segments)
                }
                let tagStart = reader.offset + 4
                try reader.skipBlock()
                let tag = cache.tag(reader.bytes(from: tagStart))
                let version = Int(try reader.read(UInt32.self))
                let payloadStart = reader.offset + 4
                try reader.skipBlock()
                let payload = reader.bytes(from: payloadStart)
                guard reader.remaining == 0 else { return nil }
                return View(sequence: sequence, time: time, origin: origin, nodePath: path, actionTag: tag,
                            actionVersion: version, payload: payload, digest: digest, notes: notes)
            } catch {
                return nil
            }
        }
    }
}

extension ActionOrigin {
    /// The byte that stands for the origin in a stored entry (the order of declaration; a switch,
    /// because `allCases` builds an array on every use).
    var logCode: UInt8 {
        switch self {
        case .sink: 0
        case .worker: 1
        case .timer: 2
        case .signal: 3
        case .props: 4
        case .acknowledgement: 5
        case .control: 6
        }
    }

    /// The origin stored as `code`; `nil` for a byte no version wrote.
    init?(logCode code: UInt8) {
        switch code {
        case 0: self = .sink
        case 1: self = .worker
        case 2: self = .timer
        case 3: self = .signal
        case 4: self = .props
        case 5: self = .acknowledgement
        case 6: self = .control
        default: return nil
        }
    }
}
