#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import WorkflowLocks

/// Who held a store's writer when a write gave up waiting for it (``LMDBError/Kind/writerBusy``):
/// the process, what state it was in, and what to do about it.
public struct WriterHolder: Sendable, Hashable, CustomStringConvertible {
    /// What the holding process was doing, read from the process table when the wait ran out.
    public enum State: String, Sendable, Hashable {
        /// Alive and scheduled (running, or sleeping in a system call such as a sync): a long
        /// write, or many writes of its in a row.
        case running
        /// Stopped (SIGSTOP, SIGTSTP, a debugger): it holds the writer until it is continued.
        case stopped
        /// Exited, not yet reaped by its parent: the kernel already let go of its lock.
        case zombie
        /// No such process any more: it let go of the writer as the wait ended.
        case gone
        /// Not known: another process of another pid namespace, or the writer was let go of
        /// as the wait ended.
        case unknown
    }

    /// The holding process's id (`nil` when the kernel did not say, e.g. from another pid namespace).
    public let pid: Int32?
    /// Whether the holder is the calling process itself (a long write of another of its threads).
    public let isThisProcess: Bool
    /// Its state as the process table had it.
    public let state: State
    /// Its command name, as the process table has it (at most 15 bytes).
    public let command: String?
    /// How long it had held the writer, as it recorded when it took it.
    public let heldFor: Duration?

    public init(pid: Int32?, isThisProcess: Bool, state: State, command: String?, heldFor: Duration?) {
        self.pid = pid
        self.isThisProcess = isThisProcess
        self.state = state
        self.command = command
        self.heldFor = heldFor
    }

    /// The holder `pid`, in the state the process table gives it now.
    static func process(_ pid: Int32) -> WriterHolder {
        guard pid > 0 else { return WriterHolder(pid: nil, isThisProcess: false, state: .unknown, command: nil, heldFor: nil) }
        guard let status = ProcessStatus.read(pid) else {
            return WriterHolder(pid: pid, isThisProcess: false, state: .gone, command: nil, heldFor: nil)
        }
        let state: State = status.hasExited ? .zombie : status.isStopped ? .stopped : .running
        return WriterHolder(pid: pid, isThisProcess: pid == getpid(), state: state, command: status.command, heldFor: nil)
    }

    /// `"process 4242 (order-service), stopped, a write open for 10.2 s"`, `"this process (pid 17), a write open for 12.1 s"`.
    public var description: String {
        let name = command.map { " (\($0))" } ?? ""
        let held = heldFor.map { ", a write open for \(Self.seconds($0))" } ?? ""
        if isThisProcess {
            return "this process (pid \(pid.map(String.init) ?? "?")\(name))\(held)"
        }
        guard let pid else { return "a process this one cannot see" }
        return "process \(pid)\(name), \(state.rawValue)\(held)"
    }

    /// What an operator can do, for the error's recovery.
    var recovery: String {
        let pidText = pid.map(String.init) ?? "?"
        switch (isThisProcess, state) {
        case (true, _):
            return "Another thread of this process has a long write open (an import, a compaction, a checkpoint, "
                + "or a write begun inside another write's closure): retry later, or raise writerWait"
        case (false, .stopped):
            return "Continue it (kill -CONT \(pidText)) or end it: its write then commits or is dropped whole, "
                + "nothing applied twice; retry afterwards"
        case (false, .running):
            return "It is writing for longer than this call may wait (a long import, compaction or checkpoint, "
                + "or writes back to back): retry later, or raise writerWait"
        case (false, .zombie), (false, .gone), (false, .unknown):
            return "The writer was let go of as the wait ended: retry"
        }
    }

    /// `"12.1 s"`: a duration in seconds, to a tenth.
    public static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = (Double(seconds) + Double(attoseconds) / 1e18) * 10
        return "\((tenths.rounded() / 10)) s"
    }
}
