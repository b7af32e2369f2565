#if canImport(Glibc)
import Glibc
#endif

/// Where this process has mapped an environment's data file: LMDB does not say (its
/// `me_mapaddr` is set only for fixed maps), so the mapping is found in /proc/self/maps by the
/// data file's inode. `nil` where /proc is not there: values are then not checked against the map.
enum MapLocation {
    /// The start address of the mapping of the file with inode `inode` at offset 0.
    static func start(ofFileWithInode inode: UInt64) -> UInt? {
        guard inode != 0, let file = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // start-end perms offset dev inode [path]
            let fields = text.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, UInt64(fields[4]) == inode, UInt64(fields[2], radix: 16) == 0,
                  let range = fields[0].split(separator: "-").first, let start = UInt(range, radix: 16) else { continue }
            return start
        }
        return nil
    }
}
