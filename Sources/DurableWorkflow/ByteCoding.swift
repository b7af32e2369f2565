/// Appends little-endian integers and length-prefixed bytes.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            write(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func write(block: [UInt8]) {
        write(UInt32(block.count))
        bytes.append(contentsOf: block)
    }
}

/// Writes what a ``ByteWriter`` would, into memory sized in advance: plain stores, for records
/// written once per action straight into the map (log entries).
struct RawWriter {
    private let base: UnsafeMutableRawPointer
    private(set) var offset = 0

    init(_ base: UnsafeMutableRawPointer) { self.base = base }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    /// Writes `block` after its length.
    mutating func write(block: UnsafeRawBufferPointer) {
        write(UInt32(block.count))
        write(bytes: block)
    }

    /// Copies `bytes` as they are (no length).
    mutating func write(bytes: UnsafeRawBufferPointer) {
        if let source = bytes.baseAddress { (base + offset).copyMemory(from: source, byteCount: bytes.count) }
        offset += bytes.count
    }

    /// The bytes written so far.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: offset) }
}

/// Reads what a ``ByteWriter`` wrote; every read checks the remaining length.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    struct Truncated: Error {}

    var remaining: Int { bytes.count - offset }

    mutating func read<T: FixedWidthInteger>(_ type: T.Type = T.self) throws(Truncated) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw Truncated() }
        defer { offset += size }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    mutating func readBlock() throws(Truncated) -> [UInt8] {
        let count = Int(try read(UInt32.self))
        guard remaining >= count else { throw Truncated() }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readString() throws(Truncated) -> String {
        let count = Int(try read(UInt32.self))
        guard remaining >= count else { throw Truncated() }
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]), as: UTF8.self)
    }

    /// Moves past a length-prefixed block without copying it.
    mutating func skipBlock() throws(Truncated) {
        let count = Int(try read(UInt32.self))
        guard remaining >= count else { throw Truncated() }
        offset += count
    }

    /// The bytes from `start` to the current offset.
    func bytes(from start: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
    }
}
