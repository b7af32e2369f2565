import DurableWorkflow
import Foundation
import Testing
import Workflow

/// The stored form of log entries: today's format (2, a word-wise checksum), format 3 (format 2
/// with notes, for the entries that carry version markers or state versions) and format 1
/// (FNV-1a), which stores written before still hold and which must keep replaying.
@Suite("Log entry formats")
struct LogEntryFormatTests {
    let entry = LogEntry(
        sequence: 42, time: WallTime(nanosecondsSinceEpoch: 1_700_000_000_123_456_789), origin: .signal,
        nodePath: NodePath(segments: [.init(workflowType: "Root", key: ""), .init(workflowType: "Upload", key: "part-7")]),
        actionTag: "upload.progress", actionVersion: 3, payload: Array("payload bytes of some length".utf8), digest: 0xDEAD_BEEF)

    /// The same entry with notes: written in format 3.
    var noted: LogEntry {
        LogEntry(sequence: entry.sequence, time: entry.time, origin: entry.origin, nodePath: entry.nodePath, actionTag: entry.actionTag,
                 actionVersion: entry.actionVersion, payload: entry.payload, digest: entry.digest,
                 notes: EntryNotes(versionMarkers: ["fee": 2, "charge": 1], stateVersions: ["App.Order": 3]))
    }

    func decode(_ bytes: [UInt8], sequence: UInt64) -> LogEntry? {
        bytes.withUnsafeBytes { LogEntry.decode($0, sequence: sequence) }
    }

    @Test("both formats decode to the same entry; new entries are written in format 2")
    func roundTrip() {
        #expect(LogEntry.currentFormat == 2)
        #expect(entry.encoded().first == 2)
        for format: UInt8 in [1, 2] {
            #expect(decode(entry.encoded(format: format), sequence: 42) == entry, "format \(format)")
        }
        let noDigest = LogEntry(sequence: 1, time: entry.time, origin: .props, nodePath: NodePath(segments: []), actionTag: LogEntry.propsTag,
                            actionVersion: 0, payload: [], digest: nil).encoded()
        #expect(decode(noDigest, sequence: 1)?.isProps == true)
    }

    @Test("an entry with notes is written in format 3 and reads back with them; one without stays in format 2")
    func notedRoundTrip() {
        let bytes = noted.encoded()
        #expect(bytes.first == 3)
        #expect(decode(bytes, sequence: 42) == noted)
        #expect(decode(bytes, sequence: 42)?.notes.versionMarkers == ["fee": 2, "charge": 1])
        // Even when asked for format 2, an entry with notes is written in format 3.
        #expect(noted.encoded(format: 2).first == 3)
        #expect(entry.encoded().first == 2)
        let propsOnly = LogEntry(sequence: 1, time: entry.time, origin: .props, nodePath: NodePath(segments: []), actionTag: LogEntry.propsTag,
                                 actionVersion: 1, payload: [1], digest: nil, notes: EntryNotes(versionMarkers: ["fee": 2]))
        #expect(decode(propsOnly.encoded(), sequence: 1)?.notes == EntryNotes(versionMarkers: ["fee": 2]))
    }

    @Test("every flipped bit, truncation and wrong sequence is caught, in every format")
    func corruption() {
        for format: UInt8 in [1, 2, 3] {
            let bytes = format == 3 ? noted.encoded() : entry.encoded(format: format)
            for index in bytes.indices {
                for bit in 0..<8 {
                    var flipped = bytes
                    flipped[index] ^= UInt8(1 << bit)
                    #expect(decode(flipped, sequence: 42) == nil, "format \(format), byte \(index), bit \(bit)")
                }
            }
            for length in 0..<bytes.count {
                #expect(decode(Array(bytes.prefix(length)), sequence: 42) == nil, "format \(format), \(length) bytes")
            }
            #expect(decode(bytes, sequence: 43) == nil, "format \(format) under another sequence")
        }
        #expect(decode(entry.encoded(format: 4), sequence: 42) == nil, "an unknown format")
        // Format 3 without its notes, or format 2 with the notes' flag: records no build writes.
        #expect(decode(entry.encoded(format: 3), sequence: 42) == nil, "format 3 without notes")
    }
}
