import LMDB
import TestSupport
import Testing
@testable import WorkflowLMDB

/// The archive's chunks of differences (store format 7), written and read back without a store.
@Suite("Archive chunks of differences")
struct DeltaChunkTests {
    /// Fills chunks with `records` as a checkpoint does (a new chunk when one is full); each
    /// chunk's bytes and its first record's index.
    func chunks(_ records: [[UInt8]]) -> [(bytes: [UInt8], first: Int)] {
        var result: [(bytes: [UInt8], first: Int)] = []
        var writer = DeltaChunk.Writer()
        var index = 0
        while index < records.count {
            writer.empty()
            let first = index
            while index < records.count {
                let added = records[index].withUnsafeBytes { record in
                    records[max(index - 1, 0)].withUnsafeBytes { previous in writer.add(record, previous: previous) }
                }
                guard added else { break }
                index += 1
            }
            result.append((writer.withBytes { Array($0) }, first))
        }
        return result
    }

    /// The records of `chunk`, whose first has sequence `first`, with their sequences.
    func read(_ chunk: [UInt8], first: UInt64) throws -> [(UInt64, [UInt8])] {
        var found: [(UInt64, [UInt8])] = []
        _ = try chunk.withUnsafeBytes { bytes in
            try DeltaChunk.forEach(bytes, first: first) { sequence, record in
                found.append((sequence, Array(record)))
                return true
            }
        }
        return found
    }

    @Test("random runs of records (like and unlike the one before, longer, shorter, empty, larger than a chunk) read back as written, each chunk within its capacity unless it holds one record")
    func roundTrips() throws {
        var generator = SeededGenerator(state: 11)
        for _ in 0..<200 {
            var records: [[UInt8]] = []
            var previous = (0..<Int.random(in: 0...120, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for _ in 0..<Int.random(in: 1...150, using: &generator) {
                var record = previous
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: record = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                case 1: record.append(contentsOf: (0..<Int.random(in: 1...40, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) })
                case 2: record.removeLast(min(record.count, Int.random(in: 1...20, using: &generator)))
                case 3: record = []
                case 4: record = [UInt8](repeating: 7, count: Int.random(in: 2_001...5_000, using: &generator))
                case 5:
                    // As many runs as a record can have: three bytes the same, one not, and so on.
                    for index in stride(from: 3, to: record.count, by: 4) { record[index] &+= 1 }
                default:
                    for _ in 0..<Int.random(in: 0...6, using: &generator) where !record.isEmpty {
                        record[Int.random(in: 0..<record.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                    }
                }
                records.append(record)
                previous = record
            }
            // No entry takes more than `mostBytes(of:)`, the room a writer makes for it.
            for (index, record) in records.enumerated() {
                let bound = DeltaChunk.mostBytes(of: record.count)
                var out = [UInt8](repeating: 0, count: bound)
                let written = record.withUnsafeBytes { record in
                    records[max(index - 1, 0)].withUnsafeBytes { previous in
                        out.withUnsafeMutableBytes { DeltaChunk.encode(record, previous: previous, into: $0.baseAddress!) }
                    }
                }
                #expect(written <= bound)
            }
            var read: [[UInt8]] = []
            for chunk in chunks(records) {
                let found = try self.read(chunk.bytes, first: 100 + UInt64(chunk.first))
                #expect(found.map(\.0) == (0..<found.count).map { 100 + UInt64(chunk.first + $0) })
                #expect(chunk.bytes.count <= DeltaChunk.capacity || found.count == 1)
                read += found.map(\.1)
            }
            #expect(read == records)
        }
    }

    @Test("records that differ from the one before in a few bytes take a few bytes each: many fit in one chunk")
    func smallDifferences() throws {
        let records = (0..<100).map { index -> [UInt8] in
            Array("wf_bench.CodableCounter bench.add {\"amount\":1} time \(1_000_000 + index)".utf8)
        }
        let written = chunks(records)
        #expect(written.count == 1)
        #expect(written[0].bytes.count < records.reduce(0) { $0 + $1.count } / 5)
        #expect(try read(written[0].bytes, first: 1).map(\.1) == records)
    }

    @Test("a chunk whose counts run past its end or its record's, whose run of the previous record's bytes runs past that record, or whose bytes are random, is reported as corrupted and never read out of bounds")
    func damage() throws {
        let damaged: [[UInt8]] = [
            [0x80],  // a count that never ends
            [0x05, 0x00, 0x09, 1, 2, 3, 4, 5],  // bytes past the record's length
            [0x05, 0x00, 0x05, 1, 2],  // bytes past the chunk's end
            [0x05, 0x02, 0x03, 1, 2, 3],  // the first record taking bytes of a previous one
            [0x02, 0x00, 0x02, 1, 2, 0x04, 0x03, 0x01, 9],  // the second taking more than the first had
            [0x05, 0x00],  // a run without its second count
            [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F],  // a length beyond any record
        ]
        for chunk in damaged {
            let failure = #expect(throws: LMDBError.self, "\(chunk)") { _ = try read(chunk, first: 1) }
            #expect(failure?.kind == .corrupted)
        }
        var generator = SeededGenerator(state: 3)
        for _ in 0..<2_000 {
            let chunk = (0..<Int.random(in: 1...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            do {
                _ = try read(chunk, first: 1)
            } catch let error as LMDBError {
                #expect(error.kind == .corrupted)
            } catch {
                Issue.record("\(chunk): \(error)")
            }
        }
    }
}
