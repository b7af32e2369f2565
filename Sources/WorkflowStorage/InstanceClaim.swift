/// Who runs an instance: a process (its pid and start time, so that a reused pid is not taken for
/// the owner) and a host within it (a token). Stored with the instance; every commit names the
/// claim it was made under and is refused when the stored claim differs, so two hosts can never
/// interleave one instance's log. The engine decides whether a claim is still alive; a backend
/// only compares claims.
public struct InstanceClaim: Sendable, Hashable {
    /// The owning process, 0 when nobody holds the instance.
    public var pid: Int32
    /// The owning process's start time (clock ticks since boot, as /proc reports it).
    public var processStart: UInt64
    /// The host within the process.
    public var token: UInt64

    /// Nobody holds the instance.
    public static let none = InstanceClaim(pid: 0, processStart: 0, token: 0)

    /// Whether nobody holds the instance.
    public var isNone: Bool { pid == 0 }

    public init(pid: Int32, processStart: UInt64, token: UInt64) {
        self.pid = pid
        self.processStart = processStart
        self.token = token
    }
}
