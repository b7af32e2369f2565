/// Log records of one instance with dense sequences, one after another in one buffer: what a
/// commit appends to a log, and what a new instance starts with. A backend stores each record's
/// bytes as they are and hands them back by sequence; it never interprets them.
public struct LogRecords: Sendable {
    /// The sequence of the first record.
    public private(set) var firstSequence: UInt64
    /// The records' bytes, one after another.
    public private(set) var bytes: [UInt8] = []
    /// How many records.
    public private(set) var count = 0
    /// Where the first record ends in `bytes`, and each later one: a commit's records are mostly
    /// one per instance, which then need no array of their own.
    private var firstEnd = 0
    private var laterEnds: [Int] = []
    /// How many records the first one's size is taken as a measure of, to reserve `bytes`.
    private let expected: Int
    /// What ``append(size:_:)`` extends `bytes` with before a record is written over it.
    private static let zeros = [UInt8](repeating: 0, count: 1024)

    /// No records yet; the first one appended will have `firstSequence`. `capacity`: how many
    /// records are expected.
    public init(firstSequence: UInt64, capacity: Int = 0) {
        precondition(firstSequence >= 1, "log sequences start at 1")
        self.firstSequence = firstSequence
        expected = capacity
        if capacity > 1 { laterEnds.reserveCapacity(capacity - 1) }
    }

    public var isEmpty: Bool { count == 0 }
    /// The sequence of the last record (`firstSequence - 1` when empty).
    public var lastSequence: UInt64 { firstSequence + UInt64(count) - 1 }

    /// Where the record at `index` ends in `bytes`.
    private func end(of index: Int) -> Int {
        index == 0 ? firstEnd : laterEnds[index - 1]
    }

    /// The record just written into `bytes` ends at its end (inlined: a replay reads each entry
    /// through here).
    @inline(__always)
    private mutating func recordEnded() {
        if count == 0 { firstEnd = bytes.count } else { laterEnds.append(bytes.count) }
        count += 1
    }

    /// Appends the record with the next sequence, as `bytes`.
    public mutating func append(_ record: [UInt8]) {
        bytes.append(contentsOf: record)
        recordEnded()
    }

    /// Appends the record with the next sequence, copied from `record`.
    public mutating func append(_ record: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: record)
        recordEnded()
    }

    /// Appends the record with the next sequence, `size` bytes written by `fill` (which must write
    /// every byte it is given).
    public mutating func append(size: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        let start = bytes.count
        if start == 0 { bytes.reserveCapacity(size * max(1, expected)) }
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
        recordEnded()
    }

    /// Calls `body` with each record's sequence and bytes, in order.
    public func forEach(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { all in
            var start = 0
            for index in 0..<count {
                let end = end(of: index)
                try body(firstSequence + UInt64(index), UnsafeRawBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
    }

    /// The bytes of the record with `sequence`.
    public func record(_ sequence: UInt64) -> ArraySlice<UInt8> {
        let index = Int(sequence - firstSequence)
        return bytes[(index == 0 ? 0 : end(of: index - 1))..<end(of: index)]
    }
}
