#if Postgres
import Foundation
import NIOCore
import PostgresNIO
import Testing
@testable import WorkflowPostgres

/// The array parameters a commit binds (the bytes postgres-nio writes for the same Swift arrays),
/// and the array answers it reads back (in the format the server answers in, as postgres-nio
/// writes it).
@Suite("PostgreSQL array parameters and answers")
struct PostgresArrayParameterTests {
    /// The type `value` binds as, and its bytes.
    static func bound<Value: PostgresThrowingDynamicTypeEncodable>(_ value: Value) throws -> (PostgresDataType, [UInt8]) {
        var buffer = ByteBuffer()
        try value.encode(into: &buffer, context: .default)
        return (value.psqlType, Array(buffer.readableBytesView))
    }

    static func expectSame<Elements: PostgresThrowingDynamicTypeEncodable>(
        _ parameter: PostgresArrayParameter, _ elements: Elements, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (ours, theirs) = (try bound(parameter), try bound(elements))
        #expect(ours.0 == theirs.0, "array type", sourceLocation: sourceLocation)
        #expect(ours.1 == theirs.1, "bytes", sourceLocation: sourceLocation)
    }

    @Test("each element type, empty and not, is written as postgres-nio writes the Swift array")
    func sameBytes() throws {
        for values in [[], [0, -1, Int64.max, Int64.min, 42]] as [[Int64]] {
            var array = PostgresArrayParameter.int8()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], [0, -1, Int32.max, 7]] as [[Int32]] {
            var array = PostgresArrayParameter.int4()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], [-1, Int16.max, 3]] as [[Int16]] {
            var array = PostgresArrayParameter.int2()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], ["", "order-1", "ünïcödé ✓"]] as [[String]] {
            var array = PostgresArrayParameter.text()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], [UUID(), UUID()]] as [[UUID]] {
            var array = PostgresArrayParameter.uuid()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], [true, false, true]] as [[Bool]] {
            var array = PostgresArrayParameter.bool()
            for value in values { array.append(value) }
            try Self.expectSame(array, values)
        }
        for values in [[], [[], [1, 2, 3], [UInt8](repeating: 0xAB, count: 300)]] as [[[UInt8]]] {
            var array = PostgresArrayParameter.bytea()
            for value in values { array.append(bytes: value[...]) }
            try Self.expectSame(array, values.map { ByteBuffer(bytes: $0) })
        }
    }

    /// The bytes the server answers `values` with (its binary array format).
    static func answer<Values: PostgresThrowingDynamicTypeEncodable>(_ values: Values) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try values.encode(into: &buffer, context: .default)
        return buffer
    }

    @Test("answers of each element type, empty and not, are read back as they were; a NULL answer holds nothing")
    func readBack() throws {
        for values in [[], [0, -1, Int64.max, Int64.min]] as [[Int64]] {
            #expect(try PostgresArrayColumn(Self.answer(values)).int64s() == values)
        }
        for values in [[], [1, -7, Int32.min]] as [[Int32]] {
            #expect(try PostgresArrayColumn(Self.answer(values)).int32s() == values)
        }
        for values in [[], [0, 3, Int16.min]] as [[Int16]] {
            #expect(try PostgresArrayColumn(Self.answer(values)).int16s() == values)
        }
        let null = try PostgresArrayColumn(nil)
        let nothing = try null.int64s()
        #expect(null.count == 0 && nothing.isEmpty)
    }

    @Test("an answer cut short, of another element type, of two dimensions or holding a NULL is refused, not misread")
    func malformedAnswers() throws {
        let whole = try Self.answer([Int64(1), 2, 3])
        for cut in [0, 5, 19, whole.readableBytes - 1] {
            var short = whole
            short.moveWriterIndex(to: short.readerIndex + cut)
            #expect(throws: PostgresArrayColumn.Malformed.self) { try PostgresArrayColumn(short).int64s() }
        }
        #expect(throws: PostgresArrayColumn.Malformed.self) { try PostgresArrayColumn(whole).int32s() }
        var twoDimensions = whole
        twoDimensions.setInteger(Int32(2), at: twoDimensions.readerIndex)
        #expect(throws: PostgresArrayColumn.Malformed.self) { try PostgresArrayColumn(twoDimensions) }
        var withNull = whole
        // The first element's length (after the 20-byte header), -1: NULL.
        withNull.setInteger(Int32(-1), at: withNull.readerIndex + 20)
        #expect(throws: PostgresArrayColumn.Malformed.self) { try PostgresArrayColumn(withNull).int64s() }
    }
}
#endif
