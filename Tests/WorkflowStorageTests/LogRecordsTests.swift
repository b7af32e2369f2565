import Testing
import WorkflowStorage

/// `LogRecords`, the buffer a commit's records travel in from the engine to a backend.
@Suite("Log records: one instance's records, written in place, read back by sequence")
struct LogRecordsTests {
    @Test("records written in place through append(size:) come back byte for byte, whatever their size, among records appended whole")
    func writtenInPlace() {
        var records = LogRecords(firstSequence: 7, capacity: 2)
        let sizes = [0, 1, 100, 1023, 1024, 1025, 3000]
        var expected: [[UInt8]] = []
        for (index, size) in sizes.enumerated() {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &+ 1) }
            records.append(size: size) { space in
                #expect(space.count == size)
                space.copyBytes(from: bytes)
            }
            expected.append(bytes)
            if index == 2 {
                records.append([9, 8, 7])
                expected.append([9, 8, 7])
            }
        }
        #expect(records.count == expected.count)
        #expect(records.lastSequence == 7 + UInt64(expected.count) - 1)
        #expect(records.bytes.count == expected.reduce(0) { $0 + $1.count })
        for (offset, bytes) in expected.enumerated() {
            #expect(Array(records.record(7 + UInt64(offset))) == bytes)
        }
        var visited: [UInt64] = []
        records.forEach { sequence, bytes in
            visited.append(sequence)
            #expect(Array(bytes) == expected[Int(sequence - 7)])
        }
        #expect(visited == Array(7..<(7 + UInt64(expected.count))))
    }

    @Test("no records, then one: counts, last sequence and reads agree (a commit's records are mostly one per instance)")
    func noneThenOne() {
        var records = LogRecords(firstSequence: 3)
        #expect(records.isEmpty && records.count == 0 && records.lastSequence == 2)
        var visited = 0
        records.forEach { _, _ in visited += 1 }
        #expect(visited == 0)
        records.append(size: 5) { space in space.copyBytes(from: [1, 2, 3, 4, 5]) }
        #expect(!records.isEmpty && records.count == 1 && records.lastSequence == 3)
        #expect(Array(records.record(3)) == [1, 2, 3, 4, 5])
        records.forEach { sequence, bytes in
            visited += 1
            #expect(sequence == 3 && Array(bytes) == [1, 2, 3, 4, 5])
        }
        #expect(visited == 1)
    }
}
