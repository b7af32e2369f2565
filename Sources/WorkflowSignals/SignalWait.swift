import DurableWorkflow
import Synchronization
import Tracing
import Workflow
import WorkflowLocks
import WorkflowStorage

/// The delivery mark of a signal version handed to a durable workflow: committed in the same
/// transaction as the log entry of the action the delivery became (exactly once, rule S7).
public struct DeliveryMark: CommitAttachment {
    let consumer: ConsumerID
    let record: DeliveryMarkRecord
    let signals: any SignalStorage
    let dispatcher: SignalDispatcher
    /// The delivery's span (with a tracer), ended when the mark commits or is abandoned.
    let span: (any Span)?

    package var deliveryMark: DeliveryMarkRecord { record }

    package var spanContext: ServiceContext? { span?.context }

    package func didCommit() {
        span?.end()
        dispatcher.finishInFlight(consumer, version: record.version)
    }

    package func didAbandon() {
        if let span {
            span.setStatus(SpanStatus(code: .error, message: "not committed: the host stopped"))
            span.end()
        }
        dispatcher.finishInFlight(consumer, version: record.version)
    }

    /// Marks the version delivered in a transaction of its own (hosts without a log).
    func commitAlone() {
        try? signals.mark(record, durability: nil)
        didCommit()
    }
}

/// What a signal wait emits: the delivery, carrying its mark to the journal.
package struct SignalWaitOutput: JournalAttachable {
    let delivery: SignalDelivery
    /// `nil` for a render test's delivery, which nothing commits.
    let mark: DeliveryMark?
    package var journalAttachment: any Sendable { mark.map { $0 as any Sendable } ?? () }

    init(delivery: SignalDelivery, mark: DeliveryMark) {
        self.delivery = delivery
        self.mark = mark
    }

    /// A delivery of `delivery` as a render test hands it over (`RenderTester.expectSignal`).
    package init(testing delivery: SignalDelivery) {
        self.delivery = delivery
        self.mark = nil
    }
}

/// The worker behind ``RenderContext/awaitSignal(_:key:behaviour:coalescing:action:)``.
///
/// Its consumer lives as long as the wait: when render passes stop declaring the wait (the
/// workflow moved on, or the node ended) the consumer is removed, so it neither holds versions
/// from pruning nor receives more. When the host stops, a durable wait's consumer stays for the
/// resumed host (an in-memory wait's goes, like its state). A crash between the commit that ends
/// a wait and this removal leaves the consumer behind (`wfctl signals` lists it).
package struct SignalWaitWorker: EndObservingWorker, DescribedWorker {
    /// The worker key of a wait for `signal` declared under `key`.
    package static func workerKey(_ signal: SignalID, key: String) -> String { "signal:\(signal):\(key)" }

    let center: SignalCenter
    package let signal: SignalID
    let behaviour: DeliveryBehaviour
    let coalescing: Coalescing
    /// The consumer `run()` registered (shared by the copies of this worker value).
    let registered = RegisteredConsumer()

    final class RegisteredConsumer: Sendable {
        let consumer = Lock<(id: ConsumerID, durable: Bool)?>(nil)
    }

    package func run() -> AsyncStream<SignalWaitOutput> {
        let center = self.center, signal = self.signal, behaviour = self.behaviour, coalescing = self.coalescing
        // In a durable host the worker's idempotency key is stable across restarts, and so is the
        // consumer derived from it: its saved position survives a crash.
        let stableKey = WorkerContext.idempotencyKey
        return AsyncStream { continuation in
            let consumer = stableKey.map { ConsumerID(stableName: "\($0)|\(signal)") } ?? ConsumerID()
            do {
                try center.register(signal, owner: stableKey ?? "in-memory workflow", behaviour: behaviour, coalescing: coalescing,
                                    scope: stableKey == nil ? .run : .durable, id: consumer)
            } catch {
                continuation.finish()
                return
            }
            let durable = stableKey != nil
            registered.consumer.withLock { $0 = (consumer, durable) }
            center.attach(consumer, handler: .workflow { delivery, mark in
                continuation.yield(SignalWaitOutput(delivery: delivery, mark: mark))
                // Without a log there is no commit to carry the mark: write it now.
                if !durable { mark.commitAlone() }
            })
            continuation.onTermination = { _ in center.detach(consumer) }
        }
    }

    package func didEnd(idempotencyKey: String?, becauseHostStopped: Bool) {
        guard let (consumer, durable) = registered.consumer.withLock({ $0 }) else { return }
        if durable && becauseHostStopped { return }
        try? center.removeConsumer(consumer)  // already gone after a `once` delivery: nothing to do
    }

    package var wait: WorkerWait { .signal("\(signal)") }

    package func isEquivalent(to other: SignalWaitWorker) -> Bool {
        signal == other.signal && behaviour == other.behaviour && coalescing == other.coalescing && center === other.center
    }
}

extension RenderContext {
    /// Waits for versions of `signal` (rule S7): each version delivered becomes the action
    /// `action` makes, applied to this node and, in a durable host, logged with origin `.signal`
    /// in the same transaction as the delivery mark, so it is applied exactly once across
    /// restarts of the poster or of this process. The host needs a ``SignalCenter``:
    /// `HostConfiguration.provide(center)`.
    public func awaitSignal<Action: WorkflowAction>(
        _ signal: SignalID, key: String = "", behaviour: DeliveryBehaviour = .once, coalescing: Coalescing = .everyVersion,
        action: @escaping (SignalDelivery) -> Action
    ) where Action.WorkflowType == WorkflowType {
        guard let center = dependency(SignalCenter.self) else {
            programmerError("\(WorkflowType.self) awaits a signal, but its host has no SignalCenter: add one with HostConfiguration.provide(center)")
            return
        }
        run(SignalWaitWorker(center: center, signal: signal, behaviour: behaviour, coalescing: coalescing),
            key: SignalWaitWorker.workerKey(signal, key: key), origin: .signal) { output in action(output.delivery) }
    }
}
