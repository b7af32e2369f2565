import Foundation
import LMDB
import Synchronization
import Workflow

/// Delivers pending versions to the consumers attached in this process, on one thread, in
/// version order per consumer; woken by posts (local or from other processes) and by a poll of
/// the store's last transaction id.
final class SignalDispatcher: @unchecked Sendable {
    // @unchecked Sendable: `state` is guarded by its mutex; `channel` is thread-safe; `thread`
    // is written once in `start` before any other thread can see it, then only read.

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
    private let environment: Environment
    private let configuration: SignalConfiguration
    private let channel: WakeChannel?
    private let state = Mutex(State())
    private weak var center: SignalCenter?
    private var lastReadID: UInt64 = 0
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// Wakes the loop when there is no socket (the fallback poll waits on it).
    private let localWake = DispatchSemaphore(value: 0)

    init(path: String, environment: Environment, configuration: SignalConfiguration) {
        self.path = path
        self.environment = environment
        self.configuration = configuration
        self.channel = environment.configuration.readOnly ? nil : WakeChannel(storePath: path)
    }

    func start(center: SignalCenter) {
        // A read-only store cannot record deliveries: there is nothing to dispatch.
        guard !environment.configuration.readOnly else { return }
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
    }

    func attach(_ consumer: ConsumerID, handler: SignalHandler) {
        state.withLock { $0.attached[consumer] = Attached(handler: handler) }
        wakeSelf()
    }

    func detach(_ consumer: ConsumerID) {
        _ = state.withLock { $0.attached.removeValue(forKey: consumer) }
    }

    func wakeSelf() {
        if let channel { channel.wakeSelf() } else { localWake.signal() }
    }

    func wakeEveryone() {
        if let channel { channel.wakeEveryone() } else { localWake.signal() }
    }

    /// A workflow delivery was committed (with its log entry) or abandoned: the next may go.
    func finishInFlight(_ consumer: ConsumerID) {
        state.withLock { $0.attached[consumer]?.inFlight = 0 }
        wakeSelf()
    }

    // MARK: The loop

    private func loop() {
        while !state.withLock({ $0.stopped }) {
            let woken = channel?.wait(timeout: configuration.pollInterval) ?? {
                // No socket (a path too long for one): poll, woken early by local posts and stop.
                let (seconds, attoseconds) = configuration.pollInterval.components
                let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                return localWake.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
            }()
            guard let center else { return }
            if woken || environment.lastTransactionID > lastReadID || hasRetryDue() {
                deliverPending(center)
            }
        }
    }

    private func hasRetryDue() -> Bool {
        let now = ContinuousClock.now
        return state.withLock { $0.attached.values.contains { $0.retryAfter.map { $0 <= now } ?? false } }
    }

    private func deliverPending(_ center: SignalCenter) {
        let consumers = state.withLock { Array($0.attached.keys) }
        if let id = try? environment.read({ txn in txn.id }) { lastReadID = id }
        for consumer in consumers { deliverAll(to: consumer, center) }
    }

    /// Hands `consumer` every pending version, one at a time, until it is up to date, its
    /// handler fails, or a workflow delivery awaits its commit.
    private func deliverAll(to consumerID: ConsumerID, _ center: SignalCenter) {
        let layout = center.layout, keepLatest = configuration.keepLatest
        while true {
            guard let attached = state.withLock({ $0.attached[consumerID] }) else { return }
            if let retry = attached.retryAfter, retry > .now { return }
            let next: SignalDelivery?
            do {
                next = try environment.read { txn -> SignalDelivery? in
                    guard let consumer = try SignalCenter.consumer(consumerID, layout: layout, txn) else { return nil }
                    return try SignalCenter.nextDelivery(for: consumer, layout: layout, txn)
                }
            } catch {
                return
            }
            guard let delivery = next else { return }
            let mark = { (txn: borrowing WriteTransaction) throws in
                try SignalCenter.mark(consumerID, version: delivery.version, terminates: delivery.terminatesConsumersAfterDelivery,
                                      keepLatest: keepLatest, layout: layout, txn)
            }
            do {
                switch attached.handler {
                case .transactional(let handler):
                    try environment.write(durability: configuration.durability) { txn in
                        // Another process may have delivered it meanwhile: re-check inside the transaction.
                        guard let current = try SignalCenter.consumer(consumerID, layout: layout, txn),
                              current.lastDelivered < delivery.version else { return }
                        try handler(delivery, txn)
                        try mark(txn)
                    }
                case .atLeastOnce(let handler):
                    try handler(delivery)
                    try environment.write(durability: configuration.durability) { txn in try mark(txn) }
                case .atMostOnce(let handler):
                    try environment.write(durability: configuration.durability) { txn in try mark(txn) }
                    handler(delivery)
                case .workflow(let handler):
                    guard attached.inFlight < delivery.version else { return }
                    state.withLock { $0.attached[consumerID]?.inFlight = delivery.version }
                    handler(delivery, DeliveryMark(
                        consumer: consumerID, version: delivery.version, terminates: delivery.terminatesConsumersAfterDelivery,
                        keepLatest: keepLatest, layout: layout, dispatcher: self))
                    return
                }
                state.withLock { $0.attached[consumerID]?.retryAfter = nil }
            } catch {
                // Not marked: the same version is retried after a pause (S5: a throwing handler).
                state.withLock { $0.attached[consumerID]?.retryAfter = .now + configuration.retryDelay }
                return
            }
        }
    }
}
