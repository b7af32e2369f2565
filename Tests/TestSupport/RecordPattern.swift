/// A deterministic record body for a sequence number, so a reader can tell a complete record
/// from a torn or wrong one without any other bookkeeping.
public enum RecordPattern {
    /// `size` bytes derived from `sequence`.
    public static func bytes(for sequence: UInt64, size: Int = 100) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: sequence &* 31 &+ UInt64($0)) }
    }

    /// Whether `bytes` is exactly the pattern for `sequence`.
    public static func matches(_ bytes: UnsafeRawBufferPointer, sequence: UInt64, size: Int = 100) -> Bool {
        bytes.count == size && bytes.elementsEqual(Self.bytes(for: sequence, size: size))
    }
}
