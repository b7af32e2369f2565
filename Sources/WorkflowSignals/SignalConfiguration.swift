import Logging
import Tracing
import WorkflowStorage

/// How a ``SignalCenter`` keeps and delivers signals.
public struct SignalConfiguration: Sendable {
    /// Versions kept for each signal beyond what its consumers still need: the newest
    /// `keepLatest` versions stay, so a consumer registered later still receives them (default 1).
    public var keepLatest: Int
    /// How often the dispatcher checks the store for commits by other processes when no wake-up
    /// arrives (wake-ups are hints; this bounds the delay if one is lost).
    public var pollInterval: Duration
    /// How long a failed handler waits before its version is retried.
    public var retryDelay: Duration
    /// The durability of posts and delivery marks (default `nil`: the store's, synced).
    /// `.processCrashSafe` survives a crash of the process, not of the machine; call
    /// `store.sync()` to flush.
    public var durability: CommitDurability?
    /// How long the dispatcher keeps watching for work after a delivery before it sleeps. A post
    /// in this window (from this process or another) is seen without waking a sleeping thread,
    /// which costs tens of microseconds on a busy or virtual machine; the price is up to this much
    /// CPU time after each burst of deliveries. `.zero` sleeps at once.
    public var spinAfterDelivery: Duration
    /// When the dispatcher is asleep, a post delivers to this process's attached handlers itself,
    /// on the posting thread, before `post` returns: no thread has to be woken (50-100 µs on a
    /// virtual machine), so a sparse signal reaches a local handler in the time of two commits.
    /// Deliveries stay one at a time and in version order per consumer (the posting thread and
    /// the dispatcher take turns), and every guarantee of the handler kinds holds. The price:
    /// handlers run on whichever thread posted, and `post` takes as long as they do. A post made
    /// while a delivery is running (from a handler, or while the dispatcher delivers) leaves it to
    /// the dispatcher. Off by default.
    public var deliverOnPostingThread: Bool
    /// Where the spans of posts and deliveries go (`workflow.signal.post`, `workflow.signal.deliver`;
    /// each version carries its post's trace context to its deliveries, in any process or host):
    /// this tracer, else the one bootstrapped in `InstrumentationSystem` (none: no spans, and
    /// versions carry no context).
    public var tracer: (any Tracer)?
    /// Where the center logs what it cannot do but goes on without (a stable name it could not
    /// keep for operators). Default: nothing is logged.
    public var logger = Logger(label: "workflow.signals", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Defaults: keep the latest version, check every 20 ms, retry after 50 ms, strict commits,
    /// watch for 250 µs after a delivery, deliver on the dispatcher thread only, the bootstrapped tracer.
    public init(
        keepLatest: Int = 1, pollInterval: Duration = .milliseconds(20), retryDelay: Duration = .milliseconds(50),
        durability: CommitDurability? = nil, spinAfterDelivery: Duration = .microseconds(250),
        deliverOnPostingThread: Bool = false, tracer: (any Tracer)? = nil
    ) {
        self.keepLatest = keepLatest
        self.pollInterval = pollInterval
        self.retryDelay = retryDelay
        self.durability = durability
        self.spinAfterDelivery = spinAfterDelivery
        self.deliverOnPostingThread = deliverOnPostingThread
        self.tracer = tracer
    }
}
