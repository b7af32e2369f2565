import LMDB

/// A run of one instance's consecutive entries stored as one value of `archive` (store format 6):
/// each entry record preceded by its length (4 bytes, big-endian); the first entry's sequence is
/// the key's, each next one's the one after.
///
/// A checkpoint that put each entry in a value of its own would add to every entry a node of the
/// page (8 bytes) and a key (24 bytes), and one insertion; a chunk adds them once for the run.
enum ArchiveChunk {
    /// The most bytes a chunk holds, unless one entry alone is larger: two such values, with
    /// their keys and nodes, fill a 4 KiB page without spilling onto overflow pages.
    static let capacity = 2_000
    /// The bytes of the length before each entry record.
    static let lengthSize = 4

    /// How many of `lengths` (entry records' sizes, in order) the chunk that starts with the
    /// first takes, and its bytes: at least one, and then as many as fit in ``capacity``.
    static func extent(of lengths: some Sequence<Int>) -> (entries: Int, bytes: Int) {
        var entries = 0, bytes = 0
        for length in lengths {
            let next = bytes + lengthSize + length
            guard entries == 0 || next <= capacity else { break }
            entries += 1
            bytes = next
        }
        return (entries, bytes)
    }

    /// Writes an entry record of `record.count` bytes at `offset` in a chunk being filled; the
    /// offset of the next.
    static func write(_ record: some Collection<UInt8>, at offset: Int, into chunk: UnsafeMutableRawBufferPointer) -> Int {
        chunk.storeBytes(of: UInt32(record.count).bigEndian, toByteOffset: offset, as: UInt32.self)
        let start = offset + lengthSize
        UnsafeMutableRawBufferPointer(rebasing: chunk[start..<start + record.count]).copyBytes(from: record)
        return start + record.count
    }

    /// Visits the entries of `chunk`, whose first has sequence `first`, until `visit` returns
    /// false; returns whether it went to the end. A length that runs past the value's end is a
    /// damaged store.
    static func forEach(
        _ chunk: UnsafeRawBufferPointer, first: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        var offset = 0, sequence = first
        while offset < chunk.count {
            guard chunk.count - offset >= lengthSize else { throw damaged(count: chunk.count, first: first, at: offset) }
            let length = Int(UInt32(bigEndian: chunk.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            let start = offset + lengthSize
            guard length <= chunk.count - start else { throw damaged(count: chunk.count, first: first, at: offset) }
            guard try visit(sequence, UnsafeRawBufferPointer(rebasing: chunk[start..<start + length])) else { return false }
            offset = start + length
            sequence += 1
        }
        return true
    }

    /// A chunk of `count` bytes from sequence `first` whose length at `offset` runs past its end.
    private static func damaged(count: Int, first: UInt64, at offset: Int) -> LMDBError {
        LMDBError(kind: .corrupted, path: "", operation: "read the archive",
                  detail: "a chunk of \(count) bytes from sequence \(first) has a length at byte \(offset) that runs past its end",
                  recovery: "Restore the store from a copy")
    }
}
