import DurableWorkflow
import Foundation
import Testing
import Workflow

/// The stored form of log entries: today's format (2, a word-wise checksum) and format 1 (FNV-1a),
/// which stores written before still hold and which must keep replaying.
@Suite("Log entry formats")
struct LogEntryFormatTests {
    let entry = LogEntry(
        sequence: 42, time: WallTime(nanosecondsSinceEpoch: 1_700_000_000_123_456_789), origin: .signal,
        nodePath: NodePath(segments: [.init(workflowType: "Root", key: ""), .init(workflowType: "Upload", key: "part-7")]),
        actionTag: "upload.progress", actionVersion: 3, payload: Array("payload bytes of some length".utf8), digest: 0xDEAD_BEEF)

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

    @Test("every flipped bit, truncation and wrong sequence is caught, in either format")
    func corruption() {
        for format: UInt8 in [1, 2] {
            let bytes = entry.encoded(format: format)
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
        #expect(decode(entry.encoded(format: 3), sequence: 42) == nil, "an unknown format")
    }
}
