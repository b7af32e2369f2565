/// One subscriber's view of a store's changes: hints that something was committed, by this
/// process or another (or another host), so a signal dispatcher looks again. A hint can be lost
/// or spurious; the store's contents are the truth, and a subscriber also polls.
public protocol ChangeFeed: Sendable {
    /// A number that grows with every commit to the store, by anyone; cheap to read. A pass that
    /// reads the store after reading `position` sees everything committed up to it.
    var position: UInt64 { get }
    /// Waits up to `timeout` for a hint meant for this subscriber; whether one arrived.
    func wait(timeout: Duration) -> Bool
    /// Tells the store's other subscribers (in other processes, too) that something was committed.
    func announce()
    /// Wakes this subscriber's own `wait`.
    func wakeSelf()
}
