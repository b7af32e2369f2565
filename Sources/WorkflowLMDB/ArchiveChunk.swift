import LMDB

/// A run of one instance's consecutive entries stored as one value of `archive` by checkpoints of
/// store format 6: each entry record preceded by its length (4 bytes, big-endian); the first
/// entry's sequence is the key's, each next one's the one after. Checkpoints of format 7 write
/// ``DeltaChunk``s; a segment record's marker says which its values are.
///
/// A checkpoint that put each entry in a value of its own (format 5) added to every entry a node
/// of the page (8 bytes) and a key (24 bytes), and one insertion; a chunk adds them once for the run.
enum ArchiveChunk {
    /// The bytes of the length before each entry record.
    static let lengthSize = 4

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
