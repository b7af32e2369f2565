#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an environment's data file must look like before any page past its meta pages is read:
/// present (for a read-only open), not empty, and at least as long as the last page its newest
/// meta page says is in use. A truncated file mapped by LMDB ends its readers with SIGBUS at the
/// first page past its end; this check turns that into a typed error at open. It runs once
/// LMDB's own open has succeeded (that open waits while another process creates the file), and
/// after a failed open, to say more clearly what is wrong.
enum DataFileCheck {
    /// The meta page's magic number and the LMDB data format version this check understands.
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let formatVersion: UInt32 = 1
    /// Offsets in a meta page: after the 16-byte page header, `MDB_meta` holds the magic, the
    /// version, the map address, the map size, two `MDB_db` records (48 bytes each; the first's
    /// pad field holds the page size), the last page number in use, then the transaction id.
    private static let magicOffset = 16, versionOffset = 20, pageSizeOffset = 40, lastPageOffset = 136, txnOffset = 144
    private static let metaLength = 152

    /// Checks `path/data.mdb`; returns normally when LMDB may open it (including when it does not
    /// exist yet and the open may create it).
    static func check(directory path: String, readOnly: Bool) throws(LMDBError) {
        let file = path + "/data.mdb"
        let fd = open(file, O_RDONLY)
        if fd < 0 {
            let code = errno
            if code == ENOENT {
                guard readOnly else { return }
                throw LMDBError(kind: .notAnLMDBEnvironment, code: code, path: path, operation: "open",
                                detail: "the directory holds no store (it has no data.mdb)",
                                recovery: "Check the path; a store is created by opening it for writing")
            }
            // Permissions and the like: LMDB's own open reports them.
            return
        }
        defer { close(fd) }
        // The meta pages first, then the size: a writer may extend the file in between, never shrink it.
        var metas: [(pageSize: Int, lastPage: UInt64, txn: UInt64)] = []
        var firstPageSize = 0
        for index in 0..<2 {
            let offset = index == 0 ? 0 : firstPageSize
            guard index == 0 || firstPageSize > 0 else { break }
            var page = [UInt8](repeating: 0, count: metaLength)
            let count = page.withUnsafeMutableBytes { pread(fd, $0.baseAddress, metaLength, off_t(offset)) }
            guard count == metaLength else { break }
            func word<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
                page.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) }
            }
            guard word(magicOffset, UInt32.self) == magic else { continue }
            guard word(versionOffset, UInt32.self) == formatVersion else { return }  // LMDB reports the mismatch
            let pageSize = Int(word(pageSizeOffset, UInt32.self))
            if index == 0 { firstPageSize = pageSize }
            metas.append((pageSize, word(lastPageOffset, UInt64.self), word(txnOffset, UInt64.self)))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let size = UInt64(info.st_size)
        if size == 0 {
            guard readOnly else { return }  // LMDB initializes an empty file opened for writing
            throw LMDBError(kind: .notAnLMDBEnvironment, path: path, operation: "open",
                            detail: "data.mdb is empty (0 bytes): the directory holds no store",
                            recovery: "Check the path; restore the store from a copy if it was emptied")
        }
        guard let newest = metas.max(by: { $0.txn < $1.txn }), newest.pageSize >= 512, newest.pageSize.nonzeroBitCount == 1 else {
            throw LMDBError(kind: .notAnLMDBEnvironment, path: path, operation: "open",
                            detail: "data.mdb (\(size) bytes) has no valid LMDB meta page",
                            recovery: "Check the path; restore the store from a copy if it was overwritten or truncated")
        }
        let needed = (newest.lastPage + 1) * UInt64(newest.pageSize)
        if size < needed {
            throw LMDBError(kind: .corrupted, path: path, operation: "open",
                            detail: "data.mdb is \(size) bytes, but its last committed transaction (\(newest.txn)) uses \(needed) bytes "
                                + "(pages 0 to \(newest.lastPage) of \(newest.pageSize) bytes): the file was truncated",
                            recovery: "Restore the store from a copy; it cannot be repaired in place")
        }
    }
}
