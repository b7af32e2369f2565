#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process-local reader/writer lock that keeps map resizes, and the environment's close, apart
/// from live transactions.
///
/// LMDB's `mdb_env_set_mapsize` may only run while this process has no transaction open, and
/// `mdb_env_close` while nothing uses the environment. Every transaction (and every other use of
/// the environment's handle) holds the gate shared for its whole life; a resize or a close holds
/// it exclusively.
final class ResizeGate: Sendable {
    // The lock lives at a stable heap address for the object's whole life; pthread rwlocks are
    // designed for concurrent use from many threads, so sharing the pointer is safe.
    nonisolated(unsafe) private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func withShared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    func withExclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
