#if Postgres
import Foundation
import NIOCore
import PostgresNIO

/// A one-dimensional array parameter of a statement: its elements written in PostgreSQL's binary
/// array format as they are appended, then bound with one copy.
///
/// postgres-nio binds a Swift array through generic code for every element, which a commit of
/// many instances (arrays of as many elements as it has instances and entries) pays for on every
/// element; this writes each with concrete code instead, and a log record's bytes straight from
/// the buffer the engine wrote them in. The bytes are those postgres-nio writes for the same
/// array (`PostgresArrayParameterTests`). The elements gather in an array of bytes, each byte
/// appended where it goes, and are copied into the statement's buffer once: a write into a
/// `ByteBuffer` checks its room and copies through a raw buffer on every call.
struct PostgresArrayParameter: PostgresDynamicTypeEncodable {
    /// The array's type (`int8[]` for elements of `int8`, and so on).
    let psqlType: PostgresDataType
    var psqlFormat: PostgresFormat { .binary }
    /// The elements' type.
    private let elementType: PostgresDataType
    /// How many elements were appended.
    private(set) var count = 0
    /// Each element: its length (`Int32`, big-endian) and its bytes.
    private var elements: [UInt8] = []

    /// An empty array of `int8` (`Int64`) elements, and so on for the other element types.
    static func int8(capacity: Int = 0) -> Self { Self(element: .int8, array: .int8Array, bytes: capacity * 12) }
    static func int4(capacity: Int = 0) -> Self { Self(element: .int4, array: .int4Array, bytes: capacity * 8) }
    static func int2(capacity: Int = 0) -> Self { Self(element: .int2, array: .int2Array, bytes: capacity * 6) }
    static func text(capacity: Int = 0) -> Self { Self(element: .text, array: .textArray, bytes: capacity * 24) }
    static func bytea(bytes: Int = 0) -> Self { Self(element: .bytea, array: .byteaArray, bytes: bytes) }
    static func uuid(capacity: Int = 0) -> Self { Self(element: .uuid, array: .uuidArray, bytes: capacity * 20) }
    static func bool(capacity: Int = 0) -> Self { Self(element: .bool, array: .boolArray, bytes: capacity * 5) }

    private init(element: PostgresDataType, array: PostgresDataType, bytes: Int) {
        elementType = element
        psqlType = array
        elements.reserveCapacity(bytes)
    }

    mutating func append(_ value: Int64) { appendInteger(value, of: .int8) }
    mutating func append(_ value: Int32) { appendInteger(value, of: .int4) }
    mutating func append(_ value: Int16) { appendInteger(value, of: .int2) }

    /// Appends `value`, an element of `type`: its length, then its bytes (big-endian).
    private mutating func appendInteger<Value: FixedWidthInteger>(_ value: Value, of type: PostgresDataType) {
        precondition(elementType == type, "an element of \(type) in an array of \(elementType)")
        appendBigEndian(Int32(MemoryLayout<Value>.size))
        appendBigEndian(value)
        count += 1
    }

    private mutating func appendBigEndian<Value: FixedWidthInteger>(_ value: Value) {
        var shift = Value.bitWidth - 8
        while shift >= 0 {
            elements.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    mutating func append(_ value: Bool) {
        precondition(elementType == .bool, "a bool element in an array of \(elementType)")
        appendBigEndian(Int32(1))
        elements.append(value ? 1 : 0)
        count += 1
    }

    mutating func append(_ value: UUID) {
        precondition(elementType == .uuid, "a uuid element in an array of \(elementType)")
        let u = value.uuid
        appendBigEndian(Int32(16))
        elements.append(contentsOf: [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])
        count += 1
    }

    mutating func append(_ value: String) {
        precondition(elementType == .text, "a text element in an array of \(elementType)")
        appendBigEndian(Int32(value.utf8.count))
        elements.append(contentsOf: value.utf8)
        count += 1
    }

    /// Appends a `bytea` element of `bytes`.
    mutating func append<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        precondition(elementType == .bytea, "a bytea element in an array of \(elementType)")
        appendBigEndian(Int32(bytes.count))
        elements.append(contentsOf: bytes)
        count += 1
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // Dimensions (none when empty), whether any element is NULL, the elements' type.
        buffer.writeMultipleIntegers(Int32(count == 0 ? 0 : 1), Int32(0), elementType.rawValue)
        guard count > 0 else { return }
        // The one dimension's length and lower bound, then the elements.
        buffer.writeMultipleIntegers(Int32(count), Int32(1))
        buffer.writeBytes(elements)
    }
}
#endif
