#if canImport(Glibc)
import Glibc
#endif
import WorkflowLocks

/// A process as the store records it: its pid and its start time (clock ticks since boot), so a
/// pid the kernel reused for another process is not mistaken for it.
package struct ProcessIdentity: Hashable, Sendable {
    package var pid: Int32
    package var startTime: UInt64

    package init(pid: Int32, startTime: UInt64) {
        self.pid = pid
        self.startTime = startTime
    }

    /// This process.
    package static let current = ProcessIdentity(pid: getpid(), startTime: ProcessStatus.read(getpid())?.startTime ?? 0)

    /// Whether this is the calling process.
    package var isCurrent: Bool { pid == getpid() }

    /// Whether the process is provably gone: no process has its pid, the process with its pid
    /// has exited and waits to be reaped (a zombie, after `kill -9` until its parent waits), or
    /// the process with its pid started at another time (the pid was reused).
    /// A process that cannot be inspected is taken to be alive: only proof of death counts.
    package var isProvablyDead: Bool {
        guard let status = ProcessStatus.read(pid) else { return true }
        if status.hasExited { return true }
        return status.startTime != startTime
    }
}
