import CLMDBSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read of every page of a store in a child process, so that damage that makes liblmdb itself
/// stop the process that reads it (a page pointer past the map, a node outside its page, an
/// assertion of liblmdb's) stops that child instead, and is reported here.
///
/// The child is forked, not a program of its own (a service embeds this library; there may be no
/// other executable to run), and runs only C: it opens the store read-only, reads every key and
/// value of every database (the free list, the main database, each named database) and touches
/// every page of each. Nothing is written.
public enum StoreWalk {
    /// How a walk ended.
    public enum Outcome: Sendable, Hashable {
        /// Every entry of every database read: `entries` in all.
        case intact(entries: UInt64)
        /// The walk's process was stopped by `signal` (SIGSEGV, SIGBUS, SIGABRT) while it read
        /// `reading`: a damaged page that would have stopped any process reading it.
        case stopped(signal: Int32, reading: String)
        /// LMDB reported an error (`code`, with its `message`) while reading `reading`: damage
        /// LMDB itself recognized, which a process reading it meets as a typed error.
        case failed(code: Int32, message: String, reading: String)
        /// The walk had not ended after the time it was given (then stopped), or could not start.
        case unfinished(reason: String, reading: String)

        /// Whether the walk found the store readable throughout.
        public var isIntact: Bool { if case .intact = self { true } else { false } }

        /// One line: what the walk found.
        public var summary: String {
            switch self {
            case .intact(let entries): "every page read (\(entries) entries)"
            case .stopped(let signal, let reading):
                "reading the store stopped the process that read it (signal \(signal), \(StoreWalk.signalName(signal))) while reading \(reading): a page is damaged"
            case .failed(let code, let message, let reading): "LMDB reported \(message) (code \(code)) while reading \(reading)"
            case .unfinished(let reason, let reading): "the walk did not end (\(reason)) while reading \(reading)"
            }
        }
    }

    /// Walks the store in the directory `path` in a child process, stopping it after `timeout`.
    public static func inChildProcess(path: String, timeout: Duration = .seconds(600)) -> Outcome {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return .unfinished(reason: "no pipe: errno \(errno)", reading: "nothing") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let pid = lmdb_walk_in_child(path, writeEnd, readEnd)
        close(writeEnd)
        guard pid > 0 else {
            close(readEnd)
            return .unfinished(reason: "fork failed: errno \(errno)", reading: "nothing")
        }
        let deadline = ContinuousClock.now + timeout
        var text: [UInt8] = [], timedOut = false
        var chunk = [UInt8](repeating: 0, count: 4096)
        pipeOpen: while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                timedOut = true
                break
            }
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let millis = Int32(min(left.components.seconds * 1000 + 1, 1000))
            let ready = poll(&poller, 1, millis)
            if ready < 0, errno != EINTR { break }
            guard ready > 0 else { continue }
            let count = read(readEnd, &chunk, chunk.count)
            switch count {
            case 0: break pipeOpen
            case ..<0: if errno != EINTR && errno != EAGAIN { break pipeOpen }
            default: text.append(contentsOf: chunk[..<count])
            }
        }
        close(readEnd)
        if timedOut { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
        let place = Self.place(from: lines)
        if timedOut { return .unfinished(reason: "stopped after \(timeout)", reading: place) }
        // WIFSIGNALED: the low 7 bits name the signal; 0 is a normal exit, 0x7f a stop.
        let signal = status & 0x7f
        if signal != 0 && signal != 0x7f { return .stopped(signal: signal, reading: place) }
        if let last = lines.last, last.hasPrefix("done ") {
            return .intact(entries: UInt64(last.split(separator: " ")[1]) ?? 0)
        }
        if let last = lines.last, last.hasPrefix("error ") {
            let parts = last.split(separator: " ", maxSplits: 2)
            return .failed(code: Int32(parts[1]) ?? 0, message: parts.count > 2 ? String(parts[2]) : "", reading: place)
        }
        return .unfinished(reason: "the walk's process ended (status \(status)) without a result", reading: place)
    }

    /// The identity of the file at `path`: device, inode and (where the file system keeps it)
    /// birth time, so that a file written anew in another's place is another; `nil` when there is
    /// no such file.
    public static func fileIdentity(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        guard lmdb_walk_file_identity(path, &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What the walk was reading, from its last progress line.
    private static func place(from lines: [String]) -> String {
        guard let last = lines.last(where: { $0.hasPrefix("db ") || $0.hasPrefix("at ") }) else { return "the store's meta pages" }
        let parts = last.split(separator: " ", maxSplits: 3).map(String.init)
        if parts[0] == "db" { return "database '\(last.dropFirst(3))' (from its first entry)" }
        guard parts.count == 4 else { return "database '\(parts[1])'" }
        return "database '\(parts[1])' after its entry \(parts[2]) (key \(parts[3]))"
    }

    /// `SIGSEGV` for 11, and so on for the signals a damaged page brings.
    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGABRT: "SIGABRT"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        case SIGTRAP: "SIGTRAP"
        case SIGKILL: "SIGKILL"
        default: "signal \(signal)"
        }
    }
}
