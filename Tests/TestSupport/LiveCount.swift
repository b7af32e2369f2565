import Synchronization

/// Counts the live values made with it, so a test of a container sees every element destroyed
/// exactly once.
public final class LiveCount: Sendable {
    let count = Atomic<Int>(0)

    public init() {}

    /// How many of its values are alive.
    public var live: Int { count.load(ordering: .relaxed) }
}

/// A value that `LiveCount` counts while it lives.
public final class Counted: Sendable {
    public let value: Int
    let counter: LiveCount

    public init(_ value: Int, _ counter: LiveCount) {
        self.value = value
        self.counter = counter
        counter.count.add(1, ordering: .relaxed)
    }

    deinit { counter.count.subtract(1, ordering: .relaxed) }
}
