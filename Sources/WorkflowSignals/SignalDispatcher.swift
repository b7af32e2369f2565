import Foundation
import Synchronization
import Tracing
import Workflow
import WorkflowLocks
import WorkflowStorage

/// Delivers pending versions to the consumers attached in this process, one delivery at a time,
/// in version order per consumer: on its own thread, woken by posts (local or from other
/// processes, through the store's change feed) and by a poll of the feed's position, or (when
/// configured) on a posting thread that finds it asleep.
final class SignalDispatcher: @unchecked Sendable {
    // @unchecked Sendable: `state` is guarded by its mutex, deliveries by `delivering`; `feed`
    // and `signals` are Sendable; `thread` and `center` are written once in `start` before any
    // post or other thread can see them, then only read.

    private struct Attached {
        var handler: SignalHandler
        /// A workflow delivery handed over and not yet committed (or abandoned).
        var inFlight: UInt64 = 0
        var retryAfter: ContinuousClock.Instant?
    }

    private struct State {
        var attached: [ConsumerID: Attached] = [:]
        var running = false
        var stopped = false
    }

    let path: String
    private let signals: any SignalStorage
    private let readOnly: Bool
    private let configuration: SignalConfiguration
    /// Spans and trace contexts of posts and deliveries (`nil`: no tracer).
    let tracing: SignalTracing?
    private let feed: any ChangeFeed
    private let state = Lock(State())
    private weak var center: SignalCenter?
    /// The feed's position when the last delivery pass began: a later commit may hold a post.
    private let lastReadPosition = Atomic<UInt64>(0)
    /// Held by whichever thread delivers (the loop, or a poster), so deliveries never overlap;
    /// it counts the delivery passes run.
    private let delivering = Lock(UInt64(0))
    /// The thread holding `delivering` (0 when none): `stop` from a handler must not wait for it.
    private let deliveringThread = Atomic<UInt>(0)
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// Counts this process's wake-ups (posts, attaches, finished workflow deliveries, stop):
    /// a spinning loop notices them without a system call.
    private let localWakes = Atomic<UInt64>(0)
    /// Whether the loop is awake (delivering or spinning): it looks at `localWakes` before it
    /// sleeps, so a wake-up needs no datagram.
    private let awake = Atomic<Bool>(true)
    /// How many handlers are attached: a post wakes this process's loop only when it has some.
    private let attachedCount = Atomic<Int>(0)

    init(path: String, signals: any SignalStorage, readOnly: Bool, configuration: SignalConfiguration) {
        self.path = path
        self.signals = signals
        self.readOnly = readOnly
        self.configuration = configuration
        self.tracing = SignalTracing(configuration)
        self.feed = signals.changeFeed()
    }

    func start(center: SignalCenter) {
        // A read-only store cannot record deliveries: there is nothing to dispatch.
        guard !readOnly else { return }
        self.center = center
        let finished = self.finished
        let thread = Thread { [weak self] in
            self?.loop()
            finished.signal()
        }
        thread.name = "signal-dispatcher"
        self.thread = thread
        state.withLock { $0.running = true }
        thread.start()
    }

    /// Stops the thread and waits until it has finished its current delivery (unless called
    /// from the thread itself), so that nothing is delivered after `stop` returns.
    func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.running && !state.stopped
        }
        guard wasRunning else { return }
        wakeSelf()
        if let thread, thread != Thread.current {
            finished.wait()
        }
        // A posting thread may be delivering: wait for it too, unless this is that thread.
        if deliveringThread.load(ordering: .sequentiallyConsistent) != Self.currentThread() {
            delivering.withLock { _ in }
        }
    }

    func attach(_ consumer: ConsumerID, handler: SignalHandler) {
        state.withLock {
            $0.attached[consumer] = Attached(handler: handler)
            attachedCount.store($0.attached.count, ordering: .sequentiallyConsistent)
        }
        wakeSelf()
    }

    func detach(_ consumer: ConsumerID) {
        state.withLock {
            $0.attached.removeValue(forKey: consumer)
            attachedCount.store($0.attached.count, ordering: .sequentiallyConsistent)
        }
    }

    /// Wakes this process's loop: an awake loop sees the counter move; a sleeping one is woken
    /// through the feed. The counter is bumped before `awake` is read and the loop
    /// clears `awake` before it reads the counter a last time (both sequentially consistent), so
    /// a wake-up is never lost between the two.
    func wakeSelf() {
        localWakes.add(1, ordering: .sequentiallyConsistent)
        guard !awake.load(ordering: .sequentiallyConsistent) else { return }
        feed.wakeSelf()
    }

    /// After a post: wakes the store's other subscribers (other processes), and delivers to this
    /// process's handlers (if it has any) here or by waking the loop.
    func didPost() {
        feed.announce()
        guard attachedCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        // Delivered here unless a delivery is running (the loop's, another poster's, or this
        // thread's own: a post from a handler); then the loop is woken for it. A loop that wakes
        // while this thread delivers waits for its turn and finds nothing left.
        if configuration.deliverOnPostingThread, !awake.load(ordering: .sequentiallyConsistent), let center,
           deliverIfFree(center) != nil {
            return
        }
        wakeSelf()
    }

    /// Runs a delivery pass on the calling thread and returns how many versions it handed over,
    /// or `nil` without waiting when another pass holds `delivering`.
    private func deliverIfFree(_ center: SignalCenter) -> Int? {
        let handedOver = delivering.withLockIfAvailable { passes -> Int in
            passes += 1
            if state.withLock({ $0.stopped }) { return 0 }
            deliveringThread.store(Self.currentThread(), ordering: .sequentiallyConsistent)
            defer { deliveringThread.store(0, ordering: .sequentiallyConsistent) }
            return deliverPending(center)
        }
        return handedOver
    }

    private static func currentThread() -> UInt {
        UInt(pthread_self())
    }

    /// The workflow delivery of `version` was committed (with its log entry) or abandoned: the
    /// next may go. A later version may be in flight already (handed over once the store showed
    /// this commit, before the commit returned here): that one stays in flight.
    func finishInFlight(_ consumer: ConsumerID, version: UInt64) {
        state.withLock { state in
            if let inFlight = state.attached[consumer]?.inFlight, inFlight <= version { state.attached[consumer]?.inFlight = 0 }
        }
        wakeSelf()
    }

    // MARK: The loop

    private func loop() {
        var lastDelivery: ContinuousClock.Instant?
        // Zero, not the counter's current value: a wake-up before the loop's first look (an attach
        // right after open, while `awake` is still set and sends no datagram) must not count as seen.
        var seenWakes: UInt64 = 0
        while !state.withLock({ $0.stopped }) {
            var woken = false
            if let last = lastDelivery, configuration.spinAfterDelivery > .zero {
                woken = spin(until: last + configuration.spinAfterDelivery, seenWakes: seenWakes)
            }
            if !woken {
                awake.store(false, ordering: .sequentiallyConsistent)
                // A wake-up that saw `awake` still set did not go through the feed: look at the
                // counter first.
                woken = localWakes.load(ordering: .sequentiallyConsistent) != seenWakes || sleep()
                awake.store(true, ordering: .sequentiallyConsistent)
            }
            seenWakes = localWakes.load(ordering: .sequentiallyConsistent)
            guard let center else { return }
            if woken || feed.position > lastReadPosition.load(ordering: .relaxed) || hasRetryDue() {
                if deliverTakingTurns(center) > 0 { lastDelivery = .now }
            }
        }
    }

    /// Delivers once any posting thread's delivery has finished (it may have left versions
    /// committed during its pass). Waits by polling, not blocking, so that a handler on a posting
    /// thread can call `stop`, which waits for this loop.
    private func deliverTakingTurns(_ center: SignalCenter) -> Int {
        while true {
            if let handedOver = deliverIfFree(center) { return handedOver }
            if state.withLock({ $0.stopped }) { return 0 }
            usleep(20)
        }
    }

    /// Watches for work without sleeping until `deadline`: a local wake-up or a commit this loop
    /// has not read (another process's post). Returns whether there is something to look at.
    private func spin(until deadline: ContinuousClock.Instant, seenWakes: UInt64) -> Bool {
        var checks = 0
        while true {
            if localWakes.load(ordering: .sequentiallyConsistent) != seenWakes || feed.position > lastReadPosition.load(ordering: .relaxed) {
                return true
            }
            checks += 1
            if checks % 64 == 0, ContinuousClock.now >= deadline || state.withLock({ $0.stopped }) { return false }
            sched_yield()
        }
    }

    /// Sleeps until a wake-up arrives or the poll interval passes; returns whether one arrived.
    private func sleep() -> Bool {
        feed.wait(timeout: configuration.pollInterval)
    }

    private func hasRetryDue() -> Bool {
        let now = ContinuousClock.now
        return state.withLock { $0.attached.values.contains { $0.retryAfter.map { $0 <= now } ?? false } }
    }

    /// Delivers to every attached consumer; returns how many versions were handed over.
    private func deliverPending(_ center: SignalCenter) -> Int {
        let consumers = state.withLock { Array($0.attached.keys) }
        lastReadPosition.store(feed.position, ordering: .relaxed)
        return consumers.reduce(0) { $0 + deliverAll(to: $1, center) }
    }

    /// Hands `consumer` every pending version, one at a time, until it is up to date, its
    /// handler fails, or a workflow delivery awaits its commit. Returns how many it handed over.
    private func deliverAll(to consumerID: ConsumerID, _ center: SignalCenter) -> Int {
        let keepLatest = configuration.keepLatest, durability = configuration.durability
        var handedOver = 0
        while true {
            // Nothing more once stopped (a handler may stop the center mid-pass).
            guard let attached = state.withLock({ $0.stopped ? nil : $0.attached[consumerID] }) else { return handedOver }
            if let retry = attached.retryAfter, retry > .now { return handedOver }
            guard let next = try? signals.nextDelivery(for: consumerID.uuid) else { return handedOver }
            let delivery = SignalDelivery(next.version, consumer: consumerID)
            let mark = DeliveryMarkRecord(consumer: consumerID.uuid, version: delivery.version,
                                          terminates: delivery.terminatesConsumersAfterDelivery, keepLatest: keepLatest)
            if case .workflow(let handler) = attached.handler {
                // Handed over already, awaiting its commit: a pass meanwhile neither hands it
                // over again nor times it again.
                guard attached.inFlight < delivery.version else { return handedOver }
                state.withLock { $0.attached[consumerID]?.inFlight = delivery.version }
                center.store.recordSignalHandedOver(posted: delivery.posted)
                // The span ends when the action the delivery becomes commits with the mark.
                let span = tracing?.startDelivery(delivery)
                handler(delivery, DeliveryMark(consumer: consumerID, record: mark, signals: signals, dispatcher: self, span: span))
                return handedOver + 1
            }
            let span = tracing?.startDelivery(delivery)
            do {
                // The handler runs in its delivery's span.
                if let span {
                    try ServiceContext.$current.withValue(span.context) {
                        try handOver(delivery, with: mark, to: attached.handler, durability: durability)
                    }
                } else {
                    try handOver(delivery, with: mark, to: attached.handler, durability: durability)
                }
                span?.end()
                center.store.recordSignalHandedOver(posted: delivery.posted)
                handedOver += 1
                state.withLock { $0.attached[consumerID]?.retryAfter = nil }
            } catch {
                span?.recordError(error)
                span?.setStatus(SpanStatus(code: .error))
                span?.end()
                // Not marked: the same version is retried after a pause (S5: a throwing handler).
                state.withLock { $0.attached[consumerID]?.retryAfter = .now + configuration.retryDelay }
                return handedOver
            }
        }
    }

    /// Runs a handler that is not a workflow's, with its mark as its kind says.
    private func handOver(_ delivery: SignalDelivery, with mark: DeliveryMarkRecord, to handler: SignalHandler,
                          durability: CommitDurability?) throws {
        switch handler {
        case .transactional(let handler):
            // Another process may have delivered it meanwhile: the storage re-checks inside the
            // transaction and then does not run the handler.
            _ = try signals.deliver(mark, durability: durability) { transaction in try handler(delivery, transaction) }
        case .atLeastOnce(let handler):
            try handler(delivery)
            try signals.mark(mark, durability: durability)
        case .atMostOnce(let handler):
            try signals.mark(mark, durability: durability)
            handler(delivery)
        case .workflow:
            preconditionFailure("a workflow's delivery is handed over with its mark, to commit with its action")
        }
    }
}
