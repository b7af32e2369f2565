import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Who is running an instance: a process (pid and start time, so a reused pid is not mistaken
/// for the owner) and a host within it. Stored with the instance's index state; a commit by
/// anyone else is refused, so two processes can never interleave one instance's log.
struct InstanceOwner: Hashable {
    var pid: Int32
    var processStart: UInt64
    var token: UInt64

    static let none = InstanceOwner(pid: 0, processStart: 0, token: 0)

    var isNone: Bool { pid == 0 }

    /// A new owner for a host of this process.
    static func claim() -> InstanceOwner {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        liveTokens.withLock { _ = $0.insert(token) }
        return InstanceOwner(pid: getpid(), processStart: processStartTime(getpid()) ?? 0, token: token)
    }

    /// Marks this owner's host as gone (its claim can be taken over).
    func release() {
        _ = Self.liveTokens.withLock { $0.remove(token) }
    }

    /// Whether the owner is still running: its process exists with the same start time and,
    /// if it is this process, its host has not stopped.
    var isAlive: Bool {
        if isNone { return false }
        if pid == getpid() { return Self.liveTokens.withLock { $0.contains(token) } }
        guard let start = processStartTime(pid) else { return false }
        return start == processStart
    }

    private static let nextToken = Atomic<UInt64>(0)
    private static let liveTokens = Mutex<Set<UInt64>>([])
}

/// The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or
/// `nil` when there is no such process.
func processStartTime(_ pid: Int32) -> UInt64? {
    guard let file = fopen("/proc/\(pid)/stat", "r") else { return nil }
    defer { fclose(file) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = fread(&buffer, 1, buffer.count, file)
    guard count > 0 else { return nil }
    let line = String(decoding: buffer[..<count], as: UTF8.self)
    // The command name (field 2) is in parentheses and may contain spaces: count from the last ')'.
    guard let close = line.lastIndex(of: ")") else { return nil }
    let fields = line[line.index(after: close)...].split(separator: " ")
    // fields[0] is field 3 (state), so field 22 is fields[19].
    return fields.count > 19 ? UInt64(fields[19]) : nil
}
