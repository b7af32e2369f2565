import Synchronization
import WorkflowLocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file or directory, identified by device and inode so that different spellings of one path match.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// The file at `path` now; `nil` when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The files of a store directory: an open environment's, or those at its path now. A directory
/// may hold other files than the environment this process opened there: its store's files were
/// deleted and made anew, or the directory was deleted and a new one took its inode.
struct StoreFiles: Equatable, Sendable {
    let data: FileIdentity?
    let lock: FileIdentity?

    init(data: FileIdentity?, lock: FileIdentity?) {
        self.data = data
        self.lock = lock
    }

    /// The files in `directory` now.
    init(in directory: String) {
        self.init(data: FileIdentity(path: directory + "/data.mdb"), lock: FileIdentity(path: directory + "/lock.mdb"))
    }
}

/// The environments this process has open, one per directory (LMDB forbids opening the same
/// environment twice in one process: closing either would drop the other's file locks). An entry
/// whose environment no longer has the directory's files gives way to the one opened on them.
final class EnvironmentRegistry: Sendable {
    static let shared = EnvironmentRegistry()

    private struct Entry {
        weak var environment: Environment?
        let owner: ObjectIdentifier
    }

    private let entries = Lock<[FileIdentity: Entry]>([:])

    /// Returns what `open` returns, given the live environment for `identity` (`nil` when there is
    /// none), and registers the environment it returns when that is another one (a new one).
    /// While a previous environment for the directory is still closing, waits for it to finish.
    func withEntry(
        _ identity: FileIdentity, _ open: (Environment?) throws(LMDBError) -> Environment
    ) throws(LMDBError) -> Environment {
        while true {
            let result: Result<Environment, LMDBError>? = entries.withLock { entries in
                if let entry = entries[identity] {
                    guard let live = entry.environment else { return nil }  // still closing
                    let result = Result { () throws(LMDBError) in try open(live) }
                    if case .success(let environment) = result, environment !== live {
                        entries[identity] = Entry(environment: environment, owner: ObjectIdentifier(environment))
                    }
                    return result
                }
                let result = Result { () throws(LMDBError) in try open(nil) }
                if case .success(let environment) = result {
                    entries[identity] = Entry(environment: environment, owner: ObjectIdentifier(environment))
                }
                return result
            }
            if let result { return try result.get() }
            sched_yield()
        }
    }

    /// Forgets `identity` once the environment that registered it has closed its handle.
    func remove(_ identity: FileIdentity, ifOwnedBy owner: ObjectIdentifier) {
        entries.withLock { entries in
            if entries[identity]?.owner == owner { entries[identity] = nil }
        }
    }
}
