/// FNV-1a, 64 bits: the checksum of log entries and the digest of states. Not cryptographic;
/// it detects torn or flipped bytes and differing encodings.
struct FNV1a64 {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ bytes: UnsafeRawBufferPointer) {
        var hash = value
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        value = hash
    }

    mutating func combine(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { combine($0) }
    }

    mutating func combine(_ text: String) {
        var copy = text
        copy.withUTF8 { combine(UnsafeRawBufferPointer($0)) }
        combine([0])
    }
}
