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

    /// Finds every leaf page (of `pageSize` bytes) of the data file at `path` that holds the node
    /// whose key is `key`, and marks it a branch page in its header, as a stray write could.
    /// Returns how many pages were damaged.
    @discardableResult
    public static func markLeafAsBranch(holdingKey key: [UInt8], inDataFile path: String, pageSize: Int = 4096) throws -> Int {
        var file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var damaged = 0
        var page = 2 * pageSize  // after the two meta pages
        while page + pageSize <= file.count {
            // The header: page number (8 bytes), pad (2), flags (2); P_LEAF is 0x02, P_BRANCH 0x01.
            if file[page + 10] == 0x02, file[page + 11] == 0,
               (page + 16..<page + pageSize - key.count).contains(where: { Array(file[$0..<$0 + key.count]) == key }) {
                file[page + 10] = 0x01
                damaged += 1
            }
            page += pageSize
        }
        try Data(file).write(to: URL(fileURLWithPath: path))
        return damaged
    }
}
