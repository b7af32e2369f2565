#if Postgres
import NIOCore
import PostgresNIO

/// A one-dimensional array a statement answered with, read from PostgreSQL's binary array format
/// with concrete code for each element type (postgres-nio decodes an array through generic code
/// for every element, and every commit reads an answer of arrays). A column is taken as its raw bytes (`ByteBuffer` decodes any column as they are).
struct PostgresArrayColumn {
    /// The elements' type, as the server named it.
    let elementType: PostgresDataType
    /// How many elements the array has.
    let count: Int
    /// The elements: each its length (`Int32`, -1 for NULL) and its bytes.
    private var elements: ByteBuffer

    /// What a column's bytes did not hold.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// The array in `bytes` (`nil`, a NULL column: no elements).
    init(_ bytes: ByteBuffer?) throws(Malformed) {
        guard var bytes else {
            elementType = .null
            count = 0
            elements = ByteBuffer()
            return
        }
        guard let (dimensions, _, type) = bytes.readMultipleIntegers(as: (Int32, Int32, UInt32).self) else {
            throw Malformed(description: "an array shorter than its header")
        }
        elementType = PostgresDataType(type)
        switch dimensions {
        case 0:
            count = 0
        case 1:
            guard let (length, _) = bytes.readMultipleIntegers(as: (Int32, Int32).self), length >= 0 else {
                throw Malformed(description: "an array without its dimension's length")
            }
            count = Int(length)
        default:
            throw Malformed(description: "an array of \(dimensions) dimensions, not one")
        }
        elements = bytes
    }

    /// The elements of an `int8[]`.
    func int64s() throws(Malformed) -> [Int64] { try read(.int8) { $0.readInteger(as: Int64.self) } }
    /// The elements of an `int4[]`.
    func int32s() throws(Malformed) -> [Int32] { try read(.int4) { $0.readInteger(as: Int32.self) } }
    /// The elements of an `int2[]`.
    func int16s() throws(Malformed) -> [Int16] { try read(.int2) { $0.readInteger(as: Int16.self) } }

    /// Each element read by `value` from its bytes (all of which it must read).
    private func read<Value>(_ type: PostgresDataType, _ value: (inout ByteBuffer) -> Value?) throws(Malformed) -> [Value] {
        guard count == 0 || elementType == type else {
            throw Malformed(description: "an array of type \(elementType.rawValue) where one of \(type.rawValue) was expected")
        }
        var bytes = elements, values: [Value] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            guard let length = bytes.readInteger(as: Int32.self), length >= 0, var element = bytes.readSlice(length: Int(length)),
                  let read = value(&element), element.readableBytes == 0 else {
                throw Malformed(description: "element \(index + 1) of \(count) of an array is NULL, cut short or not of its type")
            }
            values.append(read)
        }
        return values
    }
}
#endif
