/// FNV-1a, 64 bits: the checksum of log entries and the digest of states. Not cryptographic;
/// it detects torn or flipped bytes and differing encodings.
struct FNV1a64 {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ bytes: UnsafeRawBufferPointer) {
        guard var byte = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let end = byte + bytes.count
        var hash = value
        // A pointer walk: the buffer's iterator checks bounds on every byte.
        while byte < end {
            hash = (hash ^ UInt64(byte.pointee)) &* 0x0000_0100_0000_01B3
            byte += 1
        }
        value = hash
    }

    mutating func combine(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { combine($0) }
    }

    mutating func combine(_ text: String) {
        var copy = text
        copy.withUTF8 { combine(UnsafeRawBufferPointer($0)) }
        value = (value ^ 0) &* 0x0000_0100_0000_01B3
    }
}

/// The checksum of log entries from entry format 2 on: 64 bits, eight bytes per step, so an
/// entry of 100 bytes takes 14 steps where FNV-1a takes 100 dependent multiplications (it was a
/// tenth of replay).
/// Each step is a bijection of the running value for a given word and of the word for a given
/// running value, so a change confined to one 8-byte word always changes the result; the length
/// seeds it, so zero padding cannot hide a truncation. Not cryptographic.
enum WordChecksum {
    static func of(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> UInt64 {
        var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = step(hash, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            hash = step(hash, tail)
        }
        hash = step(hash, sequence)
        hash ^= hash >> 32
        hash &*= 0xD6E8_FEB8_6659_FD93
        return hash ^ (hash >> 32)
    }

    @inline(__always)
    private static func step(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = hash ^ (word &* 0xC2B2_AE3D_27D4_EB4F)
        return ((mixed << 31) | (mixed >> 33)) &* 0x9E37_79B9_7F4A_7C15
    }
}
