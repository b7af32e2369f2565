import Workflow

/// Hooks into the durable engine, for logging, metrics and tracing. Every hook has a no-op
/// default. Replay hooks are called on the thread running the resume; `didAppend` and
/// `didCommit` on the thread that wrote the commit: `start`'s caller for an instance's first
/// entry (its root props), then the store's committer, which commits for every instance of the
/// store (the thread of a host waiting for its commit, or a background thread), one commit at a
/// time, each instance's in sequence order. Every entry written is told to `didAppend` once. A
/// commit hook that blocks delays every instance's later commits: keep it short.
public protocol DurableObserver: Sendable {
    /// `entry` of `instance` was written to the log (its commit follows at once).
    func didAppend(_ entry: LogEntry, instance: String)
    /// A commit wrote `batchSize` entries of `instance`, up to `lastSequence`, in `duration`.
    func didCommit(instance: String, batchSize: Int, lastSequence: UInt64, duration: Duration)
    /// Replay of `instance` starts after `base` (snapshot or first entry) and goes to `target`.
    func replayWillStart(instance: String, from base: UInt64, to target: UInt64)
    /// Replay of `instance` has applied entries up to `sequence`.
    func replayProgress(instance: String, sequence: UInt64, target: UInt64)
    /// Replay of `instance` applied `entries` entries in `duration`.
    func replayDidFinish(instance: String, entries: UInt64, duration: Duration)
}

extension DurableObserver {
    public func didAppend(_ entry: LogEntry, instance: String) {}
    public func didCommit(instance: String, batchSize: Int, lastSequence: UInt64, duration: Duration) {}
    public func replayWillStart(instance: String, from base: UInt64, to target: UInt64) {}
    public func replayProgress(instance: String, sequence: UInt64, target: UInt64) {}
    public func replayDidFinish(instance: String, entries: UInt64, duration: Duration) {}
}
