import Synchronization
import WorkflowLocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file or a store directory, identified by device and inode so that different spellings of
/// one path match.
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

/// The data and lock files of a store: those an open environment opened, or those at its
/// directory now. They differ when the store's files were deleted (or replaced) under an open
/// environment, or when the directory was deleted and a new one took its inode.
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
/// environment twice in one process: closing either would drop the other's file locks).
final class EnvironmentRegistry: Sendable {
    static let shared = EnvironmentRegistry()

    /// A class, not a struct: Swift 6.3's debug builds miscompile `entries[key]?.owner` for a
    /// missing key when the value is a struct holding a `weak` reference (the absent value's
    /// uninitialized weak reference is copied, and the process crashes). A reference to an
    /// entry holds no weak reference of its own to copy.
    private final class Entry: Sendable {
        weak let environment: Environment?
        let owner: ObjectIdentifier

        init(environment: Environment) {
            self.environment = environment
            owner = ObjectIdentifier(environment)
        }
    }

    private let entries = Lock<[FileIdentity: Entry]>([:])

    /// Returns the live environment for `identity`, or registers the one `open` makes (a closed
    /// environment is forgotten as it closes).
    /// While a previous environment for the directory is still closing, waits for it to finish.
    ///
    /// The strong reference to the live environment taken inside the lock is handed out and
    /// dropped only after the lock is released: if every other use ended meanwhile, dropping it
    /// closes the environment, whose `deinit` takes the lock to forget it (not recursive).
    func withEntry(
        _ identity: FileIdentity, _ open: (Environment?) throws(LMDBError) -> Environment
    ) throws(LMDBError) -> Environment {
        while true {
            let (result, live): (Result<Environment, LMDBError>?, Environment?) = entries.withLock { entries in
                if let entry = entries[identity] {
                    guard let live = entry.environment else { return (nil, nil) }  // still closing
                    return (Result { () throws(LMDBError) in try open(live) }, live)
                }
                let result = Result { () throws(LMDBError) in try open(nil) }
                if case .success(let environment) = result {
                    entries[identity] = Entry(environment: environment)
                }
                return (result, nil)
            }
            withExtendedLifetime(live) {}
            if let result { return try result.get() }
            sched_yield()
        }
    }

    /// Forgets `identity` when the environment that registered it closes: in `close()` (with its
    /// gate held: nothing takes a gate while holding this lock), or in its `deinit`.
    func remove(_ identity: FileIdentity, ifOwnedBy owner: ObjectIdentifier) {
        entries.withLock { entries in
            if entries[identity]?.owner == owner { entries[identity] = nil }
        }
    }
}
