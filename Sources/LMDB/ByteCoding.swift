/// A value that can be written as a key or value without an intermediate copy where possible.
public protocol LMDBEncodable {
    /// Calls `body` with the bytes that represent `self`; the buffer is valid only inside `body`.
    func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R
}

/// A value that can be read back from the bytes LMDB returns.
public protocol LMDBDecodable {
    /// Decodes from bytes that are valid only during the call (they point into the map).
    init(lmdbBytes: UnsafeRawBufferPointer) throws(LMDBDecodingError)
}

/// Bytes that do not form a value of the requested type.
public struct LMDBDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The type that was requested.
    public let type: String
    /// How many bytes were found.
    public let byteCount: Int
    /// Why they do not decode.
    public let reason: String

    /// Creates a decoding error for `type` from `byteCount` bytes.
    public init(type: String, byteCount: Int, reason: String) {
        self.type = type
        self.byteCount = byteCount
        self.reason = reason
    }

    /// `"cannot decode <type> from <n> bytes: <reason>"`
    public var description: String { "cannot decode \(type) from \(byteCount) bytes: \(reason)" }
}

/// Both directions.
public typealias LMDBCodable = LMDBEncodable & LMDBDecodable

extension Array: LMDBEncodable where Element == UInt8 {
    public func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        // `withUnsafeBytes` rethrows untyped errors; the cast runs only when `body` threw (an `E`).
        // (A `Result` wrapper costs a type-metadata lookup on every call.)
        do {
            return try withUnsafeBytes { bytes in try body(bytes) }
        } catch {
            throw error as! E
        }
    }
}

extension Array: LMDBDecodable where Element == UInt8 {
    public init(lmdbBytes: UnsafeRawBufferPointer) {
        self.init(lmdbBytes)
    }
}

extension String: LMDBEncodable {
    public func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var copy = self
        do {
            return try copy.withUTF8 { utf8 in try body(UnsafeRawBufferPointer(utf8)) }
        } catch {
            throw error as! E  // only `body` throws, and it throws `E`
        }
    }
}

extension String: LMDBDecodable {
    public init(lmdbBytes: UnsafeRawBufferPointer) throws(LMDBDecodingError) {
        guard let decoded = String(validating: lmdbBytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw LMDBDecodingError(type: "String", byteCount: lmdbBytes.count, reason: "not valid UTF-8")
        }
        self = decoded
    }
}

/// `UInt64` is stored big-endian, so that keys sort numerically and can be used with `append`.
extension UInt64: LMDBEncodable {
    public func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var bigEndian = self.bigEndian
        return try Swift.withUnsafeBytes(of: &bigEndian) { (bytes) throws(E) -> R in try body(bytes) }
    }
}

extension UInt64: LMDBDecodable {
    public init(lmdbBytes: UnsafeRawBufferPointer) throws(LMDBDecodingError) {
        guard lmdbBytes.count == 8 else {
            throw LMDBDecodingError(type: "UInt64", byteCount: lmdbBytes.count, reason: "expected 8 big-endian bytes")
        }
        self = UInt64(bigEndian: lmdbBytes.loadUnaligned(as: UInt64.self))
    }
}

/// A raw byte view for callers that already hold a buffer (no copy is made).
public struct RawBytes: LMDBEncodable {
    /// The bytes; they must stay valid while the value is used.
    public let buffer: UnsafeRawBufferPointer
    /// Wraps `buffer` without copying it.
    public init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }
    public func withLMDBBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(buffer)
    }
}
