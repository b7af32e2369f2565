#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a mutual-exclusion lock: the project's one lock type.
///
/// Built on `pthread_mutex_t`, which ThreadSanitizer understands. (`Synchronization.Mutex` locks
/// with raw futex calls on Linux, which ThreadSanitizer cannot see: every value it guards was
/// reported as a data race, so the suite could not run under ThreadSanitizer.)
///
/// Don't call `withLock` again on the same lock from inside its body: the lock is not recursive.
/// Guard a value with storage, not `Void`: ThreadSanitizer reports accesses to an empty value,
/// which shares its address with the object's header, as races with reads of that header
/// (swiftlang/swift#72487).
public final class Lock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only inside `withLock`, between
    // pthread_mutex_lock and pthread_mutex_unlock of `mutex`, so no two threads touch it at once
    // and each sees the writes of the one before. The mutex lives in memory of its own (a
    // pthread mutex must not move), allocated here and freed in deinit.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Not checked dynamically for exclusivity: the mutex already keeps accesses apart.
    @usableFromInline @exclusivity(unchecked) var value: Value

    /// A lock guarding `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock, and returns what it returns.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// The value, swapped out for `placeholder` under the lock: moved, not copied, so that a
    /// caller that holds it for a while (and puts it back with ``withLock(_:)``) neither retains
    /// what it holds nor copies it on its first change.
    @inlinable
    public func take(leaving placeholder: Value) -> Value {
        withLock { value in
            var taken = placeholder
            swap(&taken, &value)
            return taken
        }
    }

    /// Runs `body` with the value if the lock is free now, and returns what it returns; `nil`
    /// without waiting when another thread holds the lock.
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value once the lock is taken, waiting at most `wait` for another
    /// thread to let go of it, and returns what it returns; `nil` when the wait ran out (the wait
    /// is measured on the realtime clock, as `pthread_mutex_timedlock` does).
    public func withLock<Result, Failure: Error>(
        waitingAtMost wait: Duration, _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        if pthread_mutex_trylock(mutex) != 0 {
            #if canImport(Glibc)
            var deadline = realtimeDeadline(after: wait)
            var locked = pthread_mutex_timedlock(mutex, &deadline)
            while locked == EINTR { locked = pthread_mutex_timedlock(mutex, &deadline) }
            if locked == ETIMEDOUT { return nil }
            precondition(locked == 0, "pthread_mutex_timedlock failed: \(locked)")
            #else
            // No timed lock on Darwin: try again every 100 µs until the wait runs out.
            let deadline = ContinuousClock.now + wait
            while pthread_mutex_trylock(mutex) != 0 {
                if ContinuousClock.now >= deadline { return nil }
                usleep(100)
            }
            #endif
        }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// The realtime clock's time `duration` from now, as `pthread_mutex_timedlock` takes a deadline.
package func realtimeDeadline(after duration: Duration) -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let (seconds, attoseconds) = max(duration, .zero).components
    let nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
    return timespec(tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
}
