import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every failure of the LMDB layer: what went wrong (`kind`), where (`path`, `operation`),
/// LMDB's or the OS's own code, and what to do about it (`recovery`).
///
/// Match on the kind with `switch error.kind` or directly in a `catch` clause:
/// `catch LMDBError.Kind.mapFull { ... }`.
public struct LMDBError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The categories of failure a caller can act on differently.
    public enum Kind: Sendable, Hashable {
        /// The store's directory (or its parent) does not exist.
        case missingDirectory
        /// The path exists but is not an LMDB environment (garbage, or a file where a directory should be).
        case notAnLMDBEnvironment
        /// The location cannot be written (permissions, read-only file system) or the
        /// environment was opened read-only and a write was attempted.
        case readOnly
        /// A key is empty or longer than LMDB's maximum (511 bytes).
        case keyTooLong
        /// The map reached the configured maximum size; nothing in the failed transaction was written.
        case mapFull
        /// The store was written by an incompatible LMDB version or format.
        case versionMismatch
        /// The same path is already open in this process with a different configuration.
        case alreadyOpen
        /// LMDB found a corrupted page or a panic; the store must be restored from a copy.
        case corrupted
        /// No space left on the device.
        case diskFull
        /// Every reader slot is in use.
        case readersFull
        /// The maximum number of named databases is reached.
        case databasesFull
        /// A named database was opened with flags that do not match how it was created.
        case incompatible
        /// A named database does not exist in a store opened read-only.
        case databaseNotFound
        /// A record could not be decoded into the requested type.
        case decodingFailed
        /// A value was not of an acceptable size (e.g. an append key out of order or empty).
        case badValue
        /// The environment was closed (``Environment/close()``): open the path again to use the store.
        case closed
        /// A write waited ``EnvironmentConfiguration/writerWait`` for the store's writer, which
        /// another process (or a long write of this one) held all that time; ``LMDBError/holder``
        /// names it. Nothing of the write was done.
        case writerBusy
        /// Any other LMDB or OS error; see `code`.
        case other

        /// Lets `catch LMDBError.Kind.mapFull` match an error of that kind.
        public static func ~= (pattern: Kind, value: any Error) -> Bool {
            (value as? LMDBError)?.kind == pattern
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// LMDB's return code or the OS `errno`, when there was one.
    public let code: Int32?
    /// The environment's path.
    public let path: String
    /// The operation that failed, e.g. `"open"`, `"put into 'log'"`, `"commit"`.
    public let operation: String
    /// A one-line explanation of the cause.
    public let detail: String
    /// What the caller or operator can do about it.
    public let recovery: String
    /// Who held the store's writer, for a ``Kind/writerBusy`` error.
    public let holder: WriterHolder?

    /// Creates an error; the library builds these, callers normally only match them.
    public init(
        kind: Kind, code: Int32? = nil, path: String, operation: String, detail: String, recovery: String, holder: WriterHolder? = nil
    ) {
        self.kind = kind
        self.code = code
        self.path = path
        self.operation = operation
        self.detail = detail
        self.recovery = recovery
        self.holder = holder
    }

    /// `"<operation> failed at <path>: <detail>. <recovery>"`
    public var description: String {
        var text = summary
        if !recovery.isEmpty { text += ". \(recovery)" }
        return text
    }

    /// What failed and where, without the recovery: `"LMDB <operation> failed at <path>: <detail> (code N)"`
    /// (for errors that wrap this one and state the recovery themselves).
    public var summary: String {
        var text = "LMDB \(operation) failed at \(path): \(detail)"
        if let code { text += " (code \(code))" }
        return text
    }


    /// The error of an operation on an environment that was closed.
    static func closed(path: String, operation: String) -> LMDBError {
        LMDBError(kind: .closed, path: path, operation: operation, detail: "the environment was closed",
                  recovery: "Open the path again (Environment.open) for a new environment on the store")
    }

    /// Maps an LMDB or errno return code to a typed error.
    static func from(code rc: Int32, path: String, operation: String) -> LMDBError {
        let message = String(cString: mdb_strerror(rc))
        switch rc {
        case ENOENT:
            return LMDBError(kind: .missingDirectory, code: rc, path: path, operation: operation,
                             detail: "no such directory", recovery: "Create the directory first or check the path")
        case ENOTDIR:
            return LMDBError(kind: .notAnLMDBEnvironment, code: rc, path: path, operation: operation,
                             detail: "the path is a file, not a store directory",
                             recovery: "Point at the store's directory, or move the file away")
        case EACCES, EROFS, EPERM:
            return LMDBError(kind: .readOnly, code: rc, path: path, operation: operation,
                             detail: "the location cannot be written (\(message))",
                             recovery: "Fix the permissions, or open the store with readOnly: true")
        case ENOSPC:
            return LMDBError(kind: .diskFull, code: rc, path: path, operation: operation,
                             detail: "no space left on the device",
                             recovery: "Free disk space; nothing committed before this is lost")
        case MDB_INVALID:
            return LMDBError(kind: .notAnLMDBEnvironment, code: rc, path: path, operation: operation,
                             detail: "the data file is not an LMDB environment",
                             recovery: "Check the path; restore the store from a copy if it was overwritten")
        case MDB_VERSION_MISMATCH:
            return LMDBError(kind: .versionMismatch, code: rc, path: path, operation: operation,
                             detail: "the store was written by an incompatible LMDB version",
                             recovery: "Open it with the LMDB version that wrote it, or export and import it")
        case MDB_MAP_FULL:
            return LMDBError(kind: .mapFull, code: rc, path: path, operation: operation,
                             detail: "the map is full", recovery: "Raise maximumMapSize")
        case MDB_CORRUPTED, MDB_PANIC, MDB_PAGE_NOTFOUND:
            return LMDBError(kind: .corrupted, code: rc, path: path, operation: operation,
                             detail: message, recovery: "Restore the store from a copy; run `mdb_dump` to salvage what is readable")
        case MDB_READERS_FULL:
            return LMDBError(kind: .readersFull, code: rc, path: path, operation: operation,
                             detail: "every reader slot is in use",
                             recovery: "Raise maxReaders or end long read transactions")
        case MDB_DBS_FULL:
            return LMDBError(kind: .databasesFull, code: rc, path: path, operation: operation,
                             detail: "too many named databases", recovery: "Raise maxDatabases")
        case MDB_INCOMPATIBLE:
            return LMDBError(kind: .incompatible, code: rc, path: path, operation: operation,
                             detail: "database flags do not match the existing database",
                             recovery: "Open the database with the flags it was created with")
        case MDB_BAD_VALSIZE:
            return LMDBError(kind: .badValue, code: rc, path: path, operation: operation,
                             detail: "a key or value has an unsupported size", recovery: "Keys must be 1 to 511 bytes")
        case MDB_KEYEXIST:
            return LMDBError(kind: .badValue, code: rc, path: path, operation: operation,
                             detail: "the key exists or is out of append order",
                             recovery: "Append keys must be greater than every key already in the database")
        default:
            return LMDBError(kind: .other, code: rc, path: path, operation: operation, detail: message, recovery: "")
        }
    }
}
