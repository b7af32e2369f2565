import DurableWorkflow
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `wfctl` on an LMDB store runs its command in a child process of itself: some damage to a
/// store's pages makes liblmdb itself stop the process that reads them (a page number past the
/// map, a node outside its page, one of liblmdb's assertions), which no check of this library's
/// can catch in time. The child then dies instead of the `wfctl` its caller started, and this
/// process reports the damage as a finding (exit 1), with what `wfctl check` finds, in place of a
/// death by signal. Everything else passes through: the child's output is this process's, its
/// exit code this one's, and SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process reach it.
///
/// `check` has a child of its own and runs unguarded; so do commands on a PostgreSQL store (no
/// liblmdb reads it) and the child itself (`WFCTL_GUARDED` is set in its environment).
package enum GuardedRun {
    /// The environment variable that marks the guarded child.
    static let marker = "WFCTL_GUARDED"

    /// The exit code of `arguments` run in a guarded child, or `nil` when they run unguarded here.
    /// In the guarded child itself: `nil`, and the child ends (SIGTERM) if its parent goes away
    /// (killed with SIGKILL, which it cannot pass on), so that no `serve` or `log --follow` is
    /// left behind.
    package static func exitCode(of arguments: [String]) -> Int32? {
        if ProcessInfo.processInfo.environment[marker] != nil {
            let parent = getppid()
            Thread.detachNewThread {
                while getppid() == parent { usleep(100_000) }
                kill(getpid(), SIGTERM)
            }
            return nil
        }
        guard let command = arguments.first, !["check", "check-walk", "help", "--help", "-h"].contains(command),
              let store = arguments.dropFirst().first(where: isLMDBStore)
        else { return nil }
        guard let child = spawn(arguments) else { return nil }
        let status = forwardingSignals(to: child) { wait(for: child) }
        let signal = status & 0x7f
        if signal == 0 { return (status >> 8) & 0xff }
        // Stopped from outside (a signal this process forwarded, or one sent to the child itself):
        // ended as the child was, with the shell's code for it.
        let crashes: Set<Int32> = [SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP]
        guard crashes.contains(signal) else { return 128 + signal }
        return reportDamage(store: store, signal: signal, asJSON: arguments.contains("--json"))
    }

    /// Whether `argument` is an LMDB store's directory (one with a data file).
    private static func isLMDBStore(_ argument: String) -> Bool {
        var info = stat()
        return !argument.hasPrefix("-") && stat(argument + "/data.mdb", &info) == 0
    }

    /// Starts this executable again with `arguments`, marked as the guarded child, with this
    /// process's standard streams and the default handling of the signals this one forwards.
    private static func spawn(_ arguments: [String]) -> pid_t? {
        var environment = ProcessInfo.processInfo.environment
        environment[marker] = "1"
        // A crash on a damaged page is reported here; Swift's backtracer would print a report of
        // its own first, from a process that keeps the output open a while.
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=no" }
        let argv = (["wfctl"] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), none = sigset_t()
        sigemptyset(&defaults)
        sigemptyset(&none)
        for signal in forwarded { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/proc/self/exe", nil, &attributes, argv, envp)
        return spawned == 0 ? pid : nil
    }

    private static let forwarded: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Runs `body` (the wait for `child`) with the signals this process is sent to end it passed
    /// on to `child` instead.
    private static func forwardingSignals(to child: pid_t, _ body: () -> Int32) -> Int32 {
        let queue = DispatchQueue(label: "wfctl.guard.signals")
        let sources = forwarded.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { kill(child, number) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        return body()
    }

    /// The child's raw wait status.
    private static func wait(for child: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 {
            guard errno == EINTR else { return 0x7f00 }
        }
        return status
    }

    /// Says that reading `store` stopped the process that read it, with what `check` finds there,
    /// and returns 1 (a finding), or 3 when `check` finds nothing (then it was not the store).
    private static func reportDamage(store: String, signal: Int32, asJSON: Bool) -> Int32 {
        let name = String(cString: strsignal(signal))
        var message = "reading \(store) stopped the process that read it (signal \(signal), \(name))"
        let code: Int32
        if let walk = try? CheckWalk.inChildProcess(store: store), !walk.isIntact {
            let found = walk.damage.prefix(3).map { damage in
                [damage.area, damage.instance.map { "instance \($0)" }, damage.sequence.map { "entry \($0)" }, damage.detail]
                    .compactMap { $0 }.joined(separator: ", ")
            }
            message += ": the store is damaged; wfctl check finds \(walk.damage.count) damaged place(s): \(found.joined(separator: "; ")). "
                + "Restore the store from a copy (wfctl export copies out the instances that still read)"
            code = 1
        } else {
            message += "; wfctl check finds no damage there: report it as a bug of wfctl, with the store if you can"
            code = 3
        }
        if asJSON, let text = try? json(WorkflowTool.ErrorReport(error: .init(exitCode: code, message: message))) { emit(text) }
        FileHandle.standardError.write(Data("wfctl: \(message)\n".utf8))
        return code
    }
}
