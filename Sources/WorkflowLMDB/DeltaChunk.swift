import LMDB

/// A run of one instance's consecutive entries stored as one value of `archive` (store format 7):
/// each entry record written as its difference from the record before it in the chunk.
///
/// An entry is its record's length, then runs until the record is whole: how many bytes are the
/// previous record's at the same offsets, how many follow as they are, and those bytes (each
/// count LEB128-encoded; the first entry's previous record is empty). An instance's consecutive
/// records mostly share their layout, workflow type, node path and action type and differ in a
/// few fields (the time, the payload, the digest), so a checkpoint writes a fraction of their
/// bytes (under a third for the service benchmark's actions).
enum DeltaChunk {
    /// The most bytes a chunk holds, unless one entry alone is larger: two such values, with
    /// their keys and nodes, fill a 4 KiB page without spilling onto overflow pages.
    static let capacity = 2_000
    /// The fewest equal bytes that end a run of bytes written as they are: a run costs two counts.
    static let shortestSameRun = 3

    /// Fills a chunk, entry by entry.
    struct Writer {
        /// The chunk's bytes so far, then room for the next entry.
        private var storage: [UInt8] = []
        /// How many bytes of ``storage`` the chunk's entries take.
        private(set) var count = 0
        /// How many entries it holds.
        private(set) var entries = 0

        /// Calls `body` with the chunk's bytes.
        func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }

        /// Adds `record`, whose previous entry (ignored for a chunk's first) is `previous`, unless
        /// the chunk holds entries already and would then hold more than ``capacity`` bytes;
        /// returns whether it was added.
        mutating func add(_ record: UnsafeRawBufferPointer, previous: UnsafeRawBufferPointer) -> Bool {
            let room = count + DeltaChunk.mostBytes(of: record.count)
            if storage.count < room { storage.append(contentsOf: repeatElement(0, count: max(room, 2 * DeltaChunk.capacity) - storage.count)) }
            let written = storage.withUnsafeMutableBytes { buffer in
                DeltaChunk.encode(record, previous: entries == 0 ? UnsafeRawBufferPointer(start: nil, count: 0) : previous,
                                  into: buffer.baseAddress! + count)
            }
            if entries > 0, count + written > DeltaChunk.capacity { return false }
            count += written
            entries += 1
            return true
        }

        /// Empties the chunk, keeping its memory.
        mutating func empty() {
            count = 0
            entries = 0
        }
    }

    /// The most bytes an entry of a record of `count` bytes takes: its length, the record's bytes,
    /// and two counts for each run (each count at most 10 bytes). After the first run, each starts
    /// with three or more bytes that are the previous record's and, unless it is the last, goes on
    /// with one or more as they are: there are at most `count / 4 + 2` runs.
    static func mostBytes(of count: Int) -> Int {
        10 + count + 20 * (count / 4 + 2)
    }

    /// Writes the entry of `record` after `previous` at `out`, which has room for
    /// ``mostBytes(of:)``; returns how many bytes it wrote.
    static func encode(_ record: UnsafeRawBufferPointer, previous: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Int {
        var written = 0
        func put(_ value: Int) {
            var rest = UInt(value)
            while rest >= 0x80 {
                out.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: written, as: UInt8.self)
                written += 1
                rest >>= 7
            }
            out.storeBytes(of: UInt8(rest), toByteOffset: written, as: UInt8.self)
            written += 1
        }
        let count = record.count, shared = min(count, previous.count)
        put(count)
        var offset = 0
        repeat {
            let same = offset < shared ? sameBytes(record, previous, from: offset, upTo: shared) : 0
            let literal = offset + same
            var end = literal
            while end < count, !startsSameRun(record, previous, at: end, shared: shared) { end += 1 }
            put(same)
            put(end - literal)
            if end > literal {
                (out + written).copyMemory(from: record.baseAddress! + literal, byteCount: end - literal)
                written += end - literal
            }
            offset = end
        } while offset < count
        return written
    }

    /// How many bytes from `offset` on, before `end` (at most either's count), `record` and
    /// `previous` have in common.
    static func sameBytes(_ record: UnsafeRawBufferPointer, _ previous: UnsafeRawBufferPointer, from offset: Int, upTo end: Int) -> Int {
        let left = record.baseAddress!, right = previous.baseAddress!
        var index = offset
        // Eight bytes at a time: the first that differs is the lowest set byte of the words' XOR.
        while index + 8 <= end {
            let difference = left.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ right.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            if difference != 0 { return index + UInt64(littleEndian: difference).trailingZeroBitCount / 8 - offset }
            index += 8
        }
        while index < end, left.load(fromByteOffset: index, as: UInt8.self) == right.load(fromByteOffset: index, as: UInt8.self) { index += 1 }
        return index - offset
    }

    /// Whether a run of at least ``shortestSameRun`` bytes `record` shares with `previous` starts
    /// at `offset` (`shared`: how far both go).
    static func startsSameRun(_ record: UnsafeRawBufferPointer, _ previous: UnsafeRawBufferPointer, at offset: Int, shared: Int) -> Bool {
        guard offset + shortestSameRun <= shared else { return false }
        let left = record.baseAddress! + offset, right = previous.baseAddress! + offset
        return left.load(as: UInt8.self) == right.load(as: UInt8.self)
            && left.load(fromByteOffset: 1, as: UInt8.self) == right.load(fromByteOffset: 1, as: UInt8.self)
            && left.load(fromByteOffset: 2, as: UInt8.self) == right.load(fromByteOffset: 2, as: UInt8.self)
    }

    /// Visits the entries of `chunk`, whose first has sequence `first`, until `visit` returns
    /// false; returns whether it went to the end. Each record is rebuilt in one buffer, valid
    /// during its visit. A record longer than the bytes it could come from, counts that run past
    /// the chunk's end or the record's, or a run of bytes said to be the previous record's beyond
    /// its end, are a damaged store.
    static func forEach(
        _ chunk: UnsafeRawBufferPointer, first: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        var record: [UInt8] = []
        var offset = 0, sequence = first, previousCount = 0
        func damaged(_ detail: String) -> LMDBError {
            LMDBError(kind: .corrupted, path: "", operation: "read the archive",
                      detail: "a chunk of \(chunk.count) bytes from sequence \(first): \(detail) at byte \(offset)",
                      recovery: "Restore the store from a copy")
        }
        func count() throws -> Int {
            var value = 0, shift = 0
            while true {
                guard offset < chunk.count, shift < 63 else { throw damaged("a count runs past its end") }
                let byte = chunk[offset]
                offset += 1
                value |= Int(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }
        while offset < chunk.count {
            let length = try count()
            // Its bytes come from the record before and the rest of the chunk.
            guard length <= previousCount + (chunk.count - offset) else { throw damaged("a record of \(length) bytes") }
            if record.count < length { record.append(contentsOf: repeatElement(0, count: length - record.count)) }
            var built = 0
            repeat {
                let same = try count(), literal = try count()
                guard same <= min(length, previousCount) - built else { throw damaged("a run of the previous record's bytes past its end") }
                built += same
                guard literal <= length - built, literal <= chunk.count - offset else { throw damaged("a run of bytes past its end") }
                record.withUnsafeMutableBytes { buffer in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[built..<built + literal])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunk[offset..<offset + literal]))
                }
                built += literal
                offset += literal
            } while built < length
            previousCount = length
            let more = try record.withUnsafeBytes { buffer in try visit(sequence, UnsafeRawBufferPointer(rebasing: buffer[0..<length])) }
            guard more else { return false }
            sequence += 1
        }
        return true
    }
}
