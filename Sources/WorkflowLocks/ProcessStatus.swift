#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What /proc/PID/stat says of a process: whether it exited, whether it is stopped, when it
/// started, and its command name. (Here, beside the lock type, because both the engine, to tell a
/// dead claim, and the LMDB layer, to name whoever holds the store's writer, read it.)
package struct ProcessStatus: Sendable {
    /// The state letter (field 3): `R` running, `S`/`D`/`I` sleeping, `T`/`t` stopped, `Z` zombie,
    /// `X` dead.
    package let state: UInt8
    /// Field 22: the start time in clock ticks since boot.
    package let startTime: UInt64
    /// Field 2: the command name (at most 15 bytes, as the kernel keeps it).
    package let command: String

    /// The process has exited (a zombie waiting to be reaped, or dead).
    package var hasExited: Bool { state == UInt8(ascii: "Z") || state == UInt8(ascii: "X") || state == UInt8(ascii: "x") }

    /// The process is stopped (SIGSTOP, SIGTSTP, or a debugger's stop): it holds what it holds
    /// until it is continued.
    package var isStopped: Bool { state == UInt8(ascii: "T") || state == UInt8(ascii: "t") }

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
        guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close else { return nil }
        let fields = line[line.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (the state), so field 22 is fields[19].
        guard fields.count > 19, let state = fields[0].utf8.first, let start = UInt64(fields[19]) else { return nil }
        return ProcessStatus(state: state, startTime: start, command: String(line[line.index(after: open)..<close]))
    }

    /// The process (thread group) thread `tid` belongs to, from `/proc/TID/status`; `nil` when
    /// there is no such thread (it ended) in this pid namespace.
    package static func process(ofThread tid: Int32) -> Int32? {
        guard tid > 0, let file = fopen("/proc/\(tid)/status", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("Tgid:") { return Int32(String(text.dropFirst(5).filter(\.isNumber))) }
        }
        return nil
    }
}
