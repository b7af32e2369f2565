#if canImport(Glibc)
import Glibc
#endif

/// The machine's monotonic clock (`CLOCK_MONOTONIC`, time since boot), the same in every process
/// of the machine: a child prints when something happened on it, and a test compares that with
/// its own readings, however late it reads the child's line.
public enum MachineClock {
    /// Nanoseconds since boot.
    public static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The duration from `start` to `end` (both from ``now``); zero if `end` is earlier.
    public static func duration(from start: UInt64, to end: UInt64) -> Duration {
        end > start ? .nanoseconds(Int64(end - start)) : .zero
    }
}
