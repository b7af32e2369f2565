import Foundation

/// Damages an LMDB data file the way a bad disk or a stray write does, for bad-input tests.
public enum PageDamage {
    /// The 16-byte key of log entry `sequence` of the instance with numeric key `instance`.
    public static func logKey(instance: UInt64, sequence: UInt64) -> [UInt8] {
        withUnsafeBytes(of: instance.bigEndian) { Array($0) } + withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
    }

    /// Finds every copy of the leaf node whose key is `key` (16 bytes, after the node's header:
    /// data size low and high halves, flags, key size) in the data file at `path`, and makes its
    /// data size 16 MiB larger. Returns how many copies were damaged.
    @discardableResult
    public static func growStoredSize(ofKey key: [UInt8], inDataFile path: String) throws -> Int {
        var file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var damaged = 0
        var offset = 8
        while offset + key.count <= file.count {
            if file[offset] == key[0], file[offset - 2] == UInt8(key.count), file[offset - 1] == 0,
               Array(file[offset..<offset + key.count]) == key {
                file[offset - 6] = 0
                file[offset - 5] = 1
                damaged += 1
            }
            offset += 1
        }
        try Data(file).write(to: URL(fileURLWithPath: path))
        return damaged
    }
}
