import CLMDBSupport
import Dispatch
import Synchronization
import WorkflowLocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's writer as this library takes it: a wait with a bound in front of LMDB's own writer
/// lock, which has none.
///
/// LMDB keeps one writer per store in a process-shared mutex of its lock file, and
/// `mdb_txn_begin` waits for it for as long as it takes: behind a process frozen in a commit
/// (SIGSTOP, a debugger), every other process's writes wait without end and without a word. So a
/// write first takes a lock of this library's, the same kind of mutex (robust, shared by every
/// process, in the file `writer.lock` of the store's directory: `clmdb_writer_lock` in
/// CLMDBSupport), but with a deadline: `pthread_mutex_timedlock`. Its holder records its pid and
/// since when it holds it beside the mutex, so whoever gives up waiting can name it. Then
/// `mdb_txn_begin` finds LMDB's mutex free, unless a program that does not take this lock
/// (`mdb_copy`, an older build) holds it. The lock only bounds waits: LMDB's mutex still keeps
/// writers apart. Where the file cannot be made (a directory this process cannot write), a
/// mutex among this process's threads bounds their waits, and waits for other processes are
/// LMDB's.
final class WriterLock: Sendable {
    /// Where the lock is, for messages.
    let path: String
    // The C lock: made at init, closed at deinit; every use between is of a mutex that lives in
    // a shared mapping of its own, made for use from any thread and process (`nil`: none could be
    // made, and `threads` stands in).
    private nonisolated(unsafe) let shared: OpaquePointer?
    /// Among this process's threads, where there is no shared lock.
    private let threads = Lock<UInt64>(0)
    /// The last take of the shared lock reported as a slow write.
    private let writeReported = Atomic<UInt64>(0)
    /// Where slow writes and long waits are reported, and after how long.
    private let reporting = Lock<SlowWriteReporting?>(nil)

    /// The lock of the store in `directory` (its file made if missing, unless `readOnly`).
    init(directory: String, readOnly: Bool) {
        path = directory
        shared = readOnly ? nil : clmdb_writer_lock_open(directory + "/writer.lock")
    }

    deinit {
        if let shared { clmdb_writer_lock_close(shared) }
    }

    /// Runs `body` holding the store's writer, once this process's other writers and every other
    /// process let go of it, waiting at most `wait` in all; throws ``LMDBError/Kind/writerBusy``,
    /// naming the holder, when the wait runs out (`body` then never runs).
    func withWriter<R>(waitingAtMost wait: Duration, operation: String, _ body: () throws -> R) throws -> R {
        guard let shared else {
            guard let outcome = try threads.withLock(waitingAtMost: wait, { _ throws -> R in try body() }) else {
                throw busy(WriterHolder(pid: getpid(), isThisProcess: true, state: .running, command: nil, heldFor: nil),
                           operation: operation, waited: wait)
            }
            return outcome
        }
        let deadline = realtimeDeadline(after: wait)
        let slow = reporting.withLock { $0 }
        var taken: Int32
        if let slow, slow.after < wait {
            // Waits past the slow-write bound are reported once, with the holder, then go on.
            var early = realtimeDeadline(after: slow.after)
            taken = clmdb_writer_lock_take(shared, &early)
            if taken == ETIMEDOUT {
                slow.report(.waiting(path: path, waited: slow.after, holder: holder()))
                var rest = deadline
                taken = clmdb_writer_lock_take(shared, &rest)
            }
        } else {
            var until = deadline
            taken = clmdb_writer_lock_take(shared, &until)
        }
        switch taken {
        case 0: break
        case ETIMEDOUT: throw busy(holder(), operation: operation, waited: wait)
        default:
            throw LMDBError(kind: .other, code: taken, path: path, operation: operation,
                            detail: "the store's writer lock (writer.lock) failed: \(String(cString: strerror(taken)))",
                            recovery: "Check the store's directory and its writer.lock file")
        }
        defer { clmdb_writer_lock_release(shared) }
        return try body()
    }

    /// Who holds the writer now, in the state the process table gives it: the process of the
    /// thread the mutex names as its owner (exact: written as it is taken), else the pid the
    /// holder recorded beside it; how long, as the holder recorded.
    private func holder() -> WriterHolder {
        guard let shared else { return WriterHolder(pid: nil, isThisProcess: false, state: .unknown, command: nil, heldFor: nil) }
        var recorded: Int32 = 0, since: UInt64 = 0, takes: UInt64 = 0
        clmdb_writer_lock_holder(shared, &recorded, &since, &takes)
        let owner = clmdb_writer_lock_owner_thread(shared)
        let pid = owner > 0 ? (ProcessStatus.process(ofThread: owner) ?? recorded) : recorded
        guard pid > 0 else { return WriterHolder(pid: nil, isThisProcess: false, state: .unknown, command: nil, heldFor: nil) }
        let process = WriterHolder.process(pid)
        return WriterHolder(pid: pid, isThisProcess: process.isThisProcess, state: process.state, command: process.command,
                            heldFor: Self.since(since))
    }

    private func busy(_ holder: WriterHolder, operation: String, waited: Duration) -> LMDBError {
        LMDBError(kind: .writerBusy, path: path, operation: operation,
                  detail: "the store's writer stayed taken for the whole wait of \(WriterHolder.seconds(waited)), by \(holder); nothing was written",
                  recovery: holder.recovery, holder: holder)
    }

    // MARK: Slow writes

    /// Reports, through `reporting`, each write of this process held longer than its bound (by
    /// the ``SlowWriteWatchdog``), and each wait for the writer longer than it.
    func report(to reporting: SlowWriteReporting?) {
        self.reporting.withLock { $0 = reporting }
        if reporting != nil, shared != nil { SlowWriteWatchdog.shared.watch(self) }
    }

    /// Whether slow writes are reported.
    var isReporting: Bool { reporting.withLock { $0 != nil } }

    /// Called by the watchdog: reports the write in progress once, if it is this process's and
    /// has been open longer than the bound. Returns false once nothing is to be watched any more.
    func checkSlowWrite() -> Bool {
        guard let reporting = reporting.withLock({ $0 }), let shared else { return false }
        var pid: Int32 = 0, since: UInt64 = 0, takes: UInt64 = 0
        clmdb_writer_lock_holder(shared, &pid, &since, &takes)
        guard pid == getpid() else { return true }
        let held = Self.since(since)
        guard held >= reporting.after, writeReported.load(ordering: .relaxed) != takes else { return true }
        writeReported.store(takes, ordering: .relaxed)
        reporting.report(.held(path: path, heldFor: held))
        return true
    }

    // MARK: Time

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The time since `nanoseconds` of the monotonic clock (the same in every process of a boot).
    static func since(_ nanoseconds: UInt64) -> Duration {
        .nanoseconds(Int64(bitPattern: monotonicNanoseconds() &- nanoseconds))
    }

}

/// A write that kept others waiting, as ``Environment/reportSlowWrites(after:_:)`` hears of it.
public enum SlowWrite: Sendable, Hashable {
    /// A write transaction of this process has been open for `heldFor` and is still open.
    case held(path: String, heldFor: Duration)
    /// A write of this process has waited `waited` (and still waits) for the writer, which
    /// `holder` holds.
    case waiting(path: String, waited: Duration, holder: WriterHolder)
}

/// Where slow writes are reported and after how long.
struct SlowWriteReporting: Sendable {
    let after: Duration
    let report: @Sendable (SlowWrite) -> Void
}

/// One timer per process, while any environment reports slow writes: every ``interval`` it looks
/// at each such environment's write in progress and reports those held past their bound.
final class SlowWriteWatchdog: Sendable {
    static let shared = SlowWriteWatchdog()
    static let interval: DispatchTimeInterval = .milliseconds(100)

    private let queue = DispatchQueue(label: "lmdb.slow-writes")
    /// The locks watched (until their environment stops reporting or closes), and the timer
    /// while there are any.
    private let state = Lock<(watched: [WriterLock], timer: (any DispatchSourceTimer)?)>(([], nil))

    func watch(_ lock: WriterLock) {
        state.withLock { state in
            if !state.watched.contains(where: { $0 === lock }) { state.watched.append(lock) }
            guard state.timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval)
            timer.setEventHandler { [weak self] in self?.check() }
            timer.resume()
            state.timer = timer
        }
    }

    /// Checks each lock; forgets those that stopped reporting, and ends the timer with the last.
    private func check() {
        let locks = state.withLock { $0.watched }
        let ended = locks.filter { !$0.checkSlowWrite() }
        guard !ended.isEmpty else { return }
        state.withLock { state in
            state.watched.removeAll { lock in !lock.isReporting && ended.contains { $0 === lock } }
            if state.watched.isEmpty {
                state.timer?.cancel()
                state.timer = nil
            }
        }
    }
}
