/// Log records of one instance with dense sequences, one after another in one buffer: what a
/// commit appends to a log, and what a new instance starts with. A backend stores each record's
/// bytes as they are and hands them back by sequence; it never interprets them.
public struct LogRecords: Sendable {
    /// The sequence of the first record.
    public private(set) var firstSequence: UInt64
    /// The records' bytes, one after another.
    public private(set) var bytes: [UInt8] = []
    /// Where each record ends in `bytes`.
    public private(set) var ends: [Int] = []
    /// What ``append(size:_:)`` extends `bytes` with before a record is written over it.
    private static let zeros = [UInt8](repeating: 0, count: 1024)

    /// No records yet; the first one appended will have `firstSequence`.
    public init(firstSequence: UInt64, capacity: Int = 0) {
        precondition(firstSequence >= 1, "log sequences start at 1")
        self.firstSequence = firstSequence
        ends.reserveCapacity(capacity)
    }

    /// How many records.
    public var count: Int { ends.count }
    public var isEmpty: Bool { ends.isEmpty }
    /// The sequence of the last record (`firstSequence - 1` when empty).
    public var lastSequence: UInt64 { firstSequence + UInt64(ends.count) - 1 }

    /// Appends the record with the next sequence, as `bytes`.
    public mutating func append(_ record: [UInt8]) {
        bytes.append(contentsOf: record)
        ends.append(bytes.count)
    }

    /// Appends the record with the next sequence, copied from `record`.
    public mutating func append(_ record: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: record)
        ends.append(bytes.count)
    }

    /// Appends the record with the next sequence, `size` bytes written by `fill` (which must write
    /// every byte it is given).
    public mutating func append(size: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        let start = bytes.count
        // Made room for with copies of a zeroed buffer: a repeated byte is appended one at a time.
        var remaining = size
        while remaining > 0 {
            let chunk = min(remaining, Self.zeros.count)
            bytes.append(contentsOf: Self.zeros[..<chunk])
            remaining -= chunk
        }
        try bytes.withUnsafeMutableBytes { all in
            try fill(UnsafeMutableRawBufferPointer(rebasing: all[start..<(start + size)]))
        }
        ends.append(bytes.count)
    }

    /// Calls `body` with each record's sequence and bytes, in order.
    public func forEach(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { all in
            var start = 0
            for (index, end) in ends.enumerated() {
                try body(firstSequence + UInt64(index), UnsafeRawBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
    }

    /// The bytes of the record with `sequence`.
    public func record(_ sequence: UInt64) -> ArraySlice<UInt8> {
        let index = Int(sequence - firstSequence)
        return bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }
}
