import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real child process running the `wf-test-child` helper (or any executable), with its
/// standard output read line by line, so tests can kill it with SIGKILL at chosen moments.
public final class ChildProcess {
    /// The child's process id.
    public let pid: pid_t
    private let output: Int32
    private var buffer: [UInt8] = []
    private var finished = false
    private var status: Int32?
    /// Why reading stopped: the end of the output, or a read that failed (with its errno).
    public private(set) var endOfOutput: String?

    /// The helper executable built next to the test bundle.
    public static var helperPath: String {
        let name = "wf-test-child"
        let besideBundle = Bundle.main.bundleURL.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: besideBundle) { return besideBundle }
        let besideRunner = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent(name).path
        return besideRunner
    }

    /// The path of `name`, an executable product built beside the helper (`wfctl`, the demos).
    public static func builtProduct(_ name: String) -> String {
        (helperPath as NSString).deletingLastPathComponent + "/" + name
    }

    /// Runs the built product `name` to its end: its exit code and output (stdout and stderr).
    public static func run(product name: String, _ arguments: [String], input: String? = nil) throws -> (code: Int32, lines: [String]) {
        let child = try ChildProcess(arguments, executable: builtProduct(name), mergeStandardError: true, standardInput: input)
        let lines = child.readRemainingLines()
        return (try child.waitForExit(), lines)
    }

    /// Starts `executable` (the helper by default) with `arguments`.
    /// With `mergeStandardError`, the child's stderr goes to the same pipe as its stdout; with
    /// `standardInput`, the child reads that file on its stdin.
    public init(
        _ arguments: [String], executable: String = ChildProcess.helperPath, environment: [String: String] = [:],
        mergeStandardError: Bool = false, standardInput: String? = nil
    ) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw ChildProcessError.spawnFailed("pipe: \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        if mergeStandardError { posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2) }
        if let standardInput { posix_spawn_file_actions_addopen(&actions, 0, standardInput, O_RDONLY, 0) }
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addclose(&actions, pipeFDs[1])

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }

        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(pipeFDs[1])
        guard rc == 0 else {
            close(pipeFDs[0])
            throw ChildProcessError.spawnFailed("posix_spawn \(executable): \(rc)")
        }
        pid = child
        output = pipeFDs[0]
    }

    deinit {
        if status == nil {
            _ = Glibc.kill(pid, SIGKILL)
            _ = try? waitForExit()
        }
        close(output)
    }

    /// The next line of output, or `nil` at end of output or when `timeout` passes first.
    public func readLine(timeout: Duration = .seconds(30)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if finished { return nil }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return nil }
            var fds = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let millis = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000, 1000))
            guard poll(&fds, 1, max(millis, 1)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(output, &chunk, chunk.count)
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
            } else if count < 0, errno == EINTR || errno == EAGAIN {
                continue
            } else {
                endOfOutput = count == 0 ? "end of output" : "read failed: errno \(errno)"
                finished = true
            }
        }
    }

    /// What a test that waits on the child can print when it waited in vain: the bytes written
    /// and not yet read, why reading stopped (if it did), and each of the child's threads with
    /// its state and the kernel function it waits in (`pipe_write`: its output is full).
    public var diagnosis: String {
        var unread: Int32 = 0
        _ = ioctl(output, UInt(FIONREAD), &unread)
        var threads: [String] = []
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks.sorted() {
            let base = "/proc/\(pid)/task/\(task)"
            let name = ((try? String(contentsOfFile: base + "/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
            let stat = (try? String(contentsOfFile: base + "/stat", encoding: .utf8)) ?? ""
            let state = stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            let channel = (try? String(contentsOfFile: base + "/wchan", encoding: .utf8)) ?? "?"
            threads.append("\(name) \(state) \(channel)")
        }
        return "pid \(pid): \(unread) bytes unread, \(buffer.count) buffered, \(endOfOutput ?? "reading"); threads: \(threads.joined(separator: ", "))"
    }

    /// Reads lines until one satisfies `predicate`; returns it, or `nil` on timeout or end.
    public func readLine(until predicate: (String) -> Bool, timeout: Duration = .seconds(30)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while let line = readLine(timeout: deadline - ContinuousClock.now) {
            if predicate(line) { return line }
        }
        return nil
    }

    /// Every remaining line until the child closes its output.
    public func readRemainingLines(timeout: Duration = .seconds(60)) -> [String] {
        var lines: [String] = []
        let deadline = ContinuousClock.now + timeout
        while let line = readLine(timeout: deadline - ContinuousClock.now) { lines.append(line) }
        return lines
    }

    /// Sends `signal` (SIGKILL by default).
    public func kill(_ signal: Int32 = SIGKILL) {
        _ = Glibc.kill(pid, signal)
    }

    /// Waits for the child to exit; returns its exit code, or `128 + signal` if a signal ended it.
    /// A child still running after `timeout` is a failure, never a hang of the suite: its
    /// ``diagnosis`` is taken, it is killed with SIGKILL and reaped, and `didNotExit` is thrown.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(240)) throws -> Int32 {
        if let status { return status }
        let deadline = ContinuousClock.now + timeout
        var raw: Int32 = 0
        var pause: UInt32 = 200
        while true {
            let reaped = waitpid(pid, &raw, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 {
                guard errno == EINTR else { throw ChildProcessError.waitFailed(errno) }
                continue
            }
            if ContinuousClock.now >= deadline {
                let seen = diagnosis
                _ = Glibc.kill(pid, SIGKILL)
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                status = 128 + SIGKILL
                throw ChildProcessError.didNotExit(after: timeout, seen)
            }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        let code = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        status = code
        return code
    }
}

/// Failures to run a child process.
public enum ChildProcessError: Error {
    case spawnFailed(String)
    case waitFailed(Int32)
    /// The child was still running when the wait's time was up (it was then killed); what it
    /// was doing: ``ChildProcess/diagnosis``.
    case didNotExit(after: Duration, String)
}
