/// A `Codable` type that also writes and reads its ``BinaryPayloadCodec`` bytes itself, skipping
/// `Codable`'s containers: an opt-in for hot action types (and node states), whose encoding and
/// decoding through `Codable` costs more than the rest of logging or replaying them.
///
/// The bytes must be exactly those `BinaryPayloadCodec` writes for the value through `Codable`, so
/// the log stays self-describing: `wfctl` shows the entries, digests do not change, and an entry
/// written one way reads the other way. A synthesized `Codable` struct is a map of its fields in
/// key order (a `nil` optional is left out); see ``BinaryPayloadWriter``.
///
/// The engine trusts a type only after checking it: the first value of each type a host logs or
/// digests is encoded both ways and read back (``BinaryPayloadCodec/checkOwnEncoding(of:)``), and a
/// difference stops the host with `DurableError.Kind.payloadMismatch`. When reading a payload
/// throws or leaves bytes unread, replay decodes it through `Codable` instead. With any other codec
/// the type is encoded through `Codable` as usual.
///
/// ```swift
/// struct Add: DurableAction, BinaryPayloadRepresentable {
///     var amount: Int
///     func writeBinaryPayload(to writer: inout BinaryPayloadWriter) {
///         writer.writeMap(count: 1)
///         writer.writeKey("amount"); writer.write(amount)
///     }
///     init(binaryPayload reader: inout BinaryPayloadReader) throws {
///         try reader.readMap(count: 1)
///         try reader.readKey("amount"); amount = try reader.read(Int.self)
///     }
/// }
/// ```
public protocol BinaryPayloadRepresentable: Codable {
    /// Writes the value's encoding (without the codec's leading marker byte).
    func writeBinaryPayload(to writer: inout BinaryPayloadWriter)
    /// Reads what ``writeBinaryPayload(to:)`` wrote; throws when the bytes hold something else.
    init(binaryPayload reader: inout BinaryPayloadReader) throws
}

/// A type's own encoding differs from its `Codable` one, or does not read back as written.
public struct BinaryPayloadMismatch: Error, Sendable, CustomStringConvertible {
    /// The type checked.
    public let type: String
    /// What differed.
    public let detail: String
    /// What `Codable` wrote, in hex.
    public let codableBytes: String
    /// What the type's own ``BinaryPayloadRepresentable/writeBinaryPayload(to:)`` wrote, in hex.
    public let ownBytes: String

    public var description: String {
        "\(type): \(detail) (Codable wrote \(codableBytes), writeBinaryPayload wrote \(ownBytes))"
    }

    /// What to do, for the `DurableError` the engine throws.
    package static let recovery = "Make writeBinaryPayload(to:) write what Codable writes and init(binaryPayload:) read it back "
        + "(test values with BinaryPayloadCodec().checkOwnEncoding(of:)), or drop the BinaryPayloadRepresentable conformance"
}

extension BinaryPayloadCodec {
    /// Checks that `value`'s own encoding equals its `Codable` encoding and reads back to a value
    /// that encodes the same. The engine runs it on the first value of each type; run it in your
    /// tests on values that exercise every branch of the encoding (optionals, enum cases).
    public func checkOwnEncoding<T: BinaryPayloadRepresentable>(of value: T) throws(BinaryPayloadMismatch) {
        let own = Self.ownEncoding(of: value)
        func mismatch(_ detail: String, codable: [UInt8] = []) -> BinaryPayloadMismatch {
            BinaryPayloadMismatch(type: String(reflecting: T.self), detail: detail, codableBytes: Self.hex(codable), ownBytes: Self.hex(own))
        }
        let codable: [UInt8]
        do {
            codable = try encode(value)
        } catch {
            throw mismatch("Codable could not encode the value: \(error)")
        }
        guard codable == own else { throw mismatch("the two encodings differ", codable: codable) }
        let readBack: T
        do {
            readBack = try own.withUnsafeBytes { try BinaryPayloadReader.read(T.self, from: $0) }
        } catch {
            throw mismatch("init(binaryPayload:) could not read the bytes back: \(error)", codable: codable)
        }
        guard Self.ownEncoding(of: readBack) == own else {
            throw mismatch("the value read back by init(binaryPayload:) encodes differently", codable: codable)
        }
    }

    /// The marker and `value`'s own bytes.
    static func ownEncoding<T: BinaryPayloadRepresentable>(of value: T) -> [UInt8] {
        var bytes: [UInt8] = []
        BinaryPayloadWriter.append(value, to: &bytes)
        return bytes
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "nothing" : bytes.map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined()
    }
}
