import Synchronization
import WorkflowLocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store directory, identified by device and inode so that different spellings of one path match.
struct DirectoryIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
}

/// The environments this process has open, one per directory (LMDB forbids opening the same
/// environment twice in one process: closing either would drop the other's file locks).
final class EnvironmentRegistry: Sendable {
    static let shared = EnvironmentRegistry()

    private struct Entry {
        weak var environment: Environment?
        let owner: ObjectIdentifier
    }

    private let entries = Lock<[DirectoryIdentity: Entry]>([:])

    /// Returns the live environment for `identity`, or registers the one `open` makes.
    /// While a previous environment for the directory is still closing, waits for it to finish.
    ///
    /// The strong reference to the live environment taken inside the lock is handed out and
    /// dropped only after the lock is released: if every other use ended meanwhile, dropping it
    /// closes the environment, whose `deinit` takes the lock to forget it (not recursive).
    func withEntry(
        _ identity: DirectoryIdentity, _ open: (Environment?) throws(LMDBError) -> Environment
    ) throws(LMDBError) -> Environment {
        while true {
            let (result, live): (Result<Environment, LMDBError>?, Environment?) = entries.withLock { entries in
                if let entry = entries[identity] {
                    guard let live = entry.environment else { return (nil, nil) }  // still closing
                    return (Result { () throws(LMDBError) in try open(live) }, live)
                }
                let result = Result { () throws(LMDBError) in try open(nil) }
                if case .success(let environment) = result {
                    entries[identity] = Entry(environment: environment, owner: ObjectIdentifier(environment))
                }
                return (result, nil)
            }
            withExtendedLifetime(live) {}
            if let result { return try result.get() }
            sched_yield()
        }
    }

    /// Forgets `identity` once the environment that registered it has closed its handle.
    func remove(_ identity: DirectoryIdentity, ifOwnedBy owner: ObjectIdentifier) {
        entries.withLock { entries in
            if entries[identity]?.owner == owner { entries[identity] = nil }
        }
    }
}
