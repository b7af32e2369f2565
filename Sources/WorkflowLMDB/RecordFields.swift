/// How the index's and the control requests' records write their fields: little-endian
/// integers, strings as a 32-bit length and UTF-8, one after another.
enum RecordFields {
    static func append(_ value: some FixedWidthInteger, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    static func append(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8)
        append(UInt32(utf8.count), to: &bytes)
        bytes.append(contentsOf: utf8)
    }

    /// Reads the fields ``append(_:to:)`` wrote, in order; `nil` once the bytes run out.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        mutating func next<T: FixedWidthInteger>(_ type: T.Type) -> T? {
            guard bytes.count - offset >= MemoryLayout<T>.size else { return nil }
            defer { offset += MemoryLayout<T>.size }
            return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        }

        mutating func nextString() -> String? {
            guard let count = next(UInt32.self).map(Int.init), bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]), as: UTF8.self)
        }
    }
}
