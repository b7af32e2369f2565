#if canImport(Glibc)
import Glibc
#endif

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

/// What /proc/PID/stat says of a process.
package struct ProcessStatus: Sendable {
    /// The state letter (field 3): `Z` zombie, `X` dead, others running or sleeping.
    package let state: UInt8
    /// Field 22: the start time in clock ticks since boot.
    package let startTime: UInt64

    /// The process has exited (a zombie waiting to be reaped, or dead).
    package var hasExited: Bool { state == UInt8(ascii: "Z") || state == UInt8(ascii: "X") || state == UInt8(ascii: "x") }

    /// The status of process `pid`, or `nil` when there is no such process.
    package static func read(_ pid: Int32) -> ProcessStatus? {
        guard pid > 0, let file = fopen("/proc/\(pid)/stat", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = fread(&buffer, 1, buffer.count, file)
        guard count > 0 else { return nil }
        return parse(buffer[..<count])
    }

    /// Parses the text of /proc/PID/stat.
    package static func parse(_ bytes: some Collection<UInt8>) -> ProcessStatus? {
        let line = String(decoding: bytes, as: UTF8.self)
        // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
        guard let close = line.lastIndex(of: ")") else { return nil }
        let fields = line[line.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (the state), so field 22 is fields[19].
        guard fields.count > 19, let state = fields[0].utf8.first, let start = UInt64(fields[19]) else { return nil }
        return ProcessStatus(state: state, startTime: start)
    }
}
