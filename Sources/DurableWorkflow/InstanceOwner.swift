import Synchronization
import WorkflowLocks
import WorkflowStorage

#if canImport(Glibc)
import Glibc
#endif

/// Who is running an instance (see ``InstanceClaim``): a host of a process.
typealias InstanceOwner = InstanceClaim

/// Claims of this process's hosts, and whether a claim is alive.
extension InstanceClaim {
    /// A new owner for a host of this process.
    static func claim() -> InstanceOwner {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        liveTokens.withLock { _ = $0.insert(token) }
        let process = ProcessIdentity.current
        return InstanceOwner(pid: process.pid, processStart: process.startTime, token: token)
    }

    /// Marks this owner's host as gone (its claim can be taken over).
    func release() {
        _ = Self.liveTokens.withLock { $0.remove(token) }
    }

    /// Whether the owner may still be running: if it is this process, its host has not stopped;
    /// otherwise its process is not provably dead (see ``ProcessIdentity/isProvablyDead``: a
    /// zombie or a reused pid is dead).
    var isAlive: Bool {
        if isNone { return false }
        let process = ProcessIdentity(pid: pid, startTime: processStart)
        if process.isCurrent { return Self.liveTokens.withLock { $0.contains(token) } }
        return !process.isProvablyDead
    }

    private static let nextToken = Atomic<UInt64>(0)
    private static let liveTokens = Lock<Set<UInt64>>([])
}
