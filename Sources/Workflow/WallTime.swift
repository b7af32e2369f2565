#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point in wall-clock time, in nanoseconds since the Unix epoch (UTC).
///
/// Actions read the time through ``ApplyContext/now``: the runtime stamps each applied action
/// once, and a durable host logs that stamp and hands the same value back during replay, so an
/// action that sets a deadline from `now` sets the same deadline when it is replayed.
public struct WallTime: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    public var nanosecondsSinceEpoch: Int64

    /// The time `nanosecondsSinceEpoch` after the epoch.
    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// The system's current wall-clock time.
    public static func now() -> WallTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return WallTime(nanosecondsSinceEpoch: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    /// This time moved by `duration`.
    public func advanced(by duration: Duration) -> WallTime {
        let (seconds, attoseconds) = duration.components
        return WallTime(nanosecondsSinceEpoch: nanosecondsSinceEpoch + seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The duration from `other` to this time.
    public func duration(since other: WallTime) -> Duration {
        .nanoseconds(nanosecondsSinceEpoch - other.nanosecondsSinceEpoch)
    }

    public static func < (lhs: WallTime, rhs: WallTime) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
    public static func + (lhs: WallTime, rhs: Duration) -> WallTime { lhs.advanced(by: rhs) }

    /// Seconds since the epoch with milliseconds, e.g. `1763719200.123`.
    public var description: String {
        let millis = nanosecondsSinceEpoch / 1_000_000
        let fraction = String(abs(millis % 1000))
        return "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// Where a host reads the time and waits for deadlines. Inject a manual clock in tests so timers
/// fire without sleeping.
public protocol WorkflowClock: Sendable {
    /// The current time.
    func now() -> WallTime
    /// Returns at or after `deadline`, or throws when the surrounding task is cancelled.
    func sleep(until deadline: WallTime) async throws
}

/// The system clock.
public struct SystemClock: WorkflowClock {
    /// The system clock.
    public init() {}
    public func now() -> WallTime { .now() }
    public func sleep(until deadline: WallTime) async throws {
        let remaining = deadline.duration(since: .now())
        if remaining > .zero { try await Task.sleep(for: remaining) }
    }
}
