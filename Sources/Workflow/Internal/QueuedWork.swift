import Synchronization

/// Identifies a live node within one host.
typealias NodeID = UInt64

/// Something the host's queue accepts; implemented by the runtime.
protocol ActionQueue: AnyObject, Sendable {
    func enqueue(_ item: consuming QueueItem)
    /// The in-flight work of the workers the queue's host runs.
    var drainGate: DrainGate { get }
}

/// An entry in the host's first-in-first-out queue.
///
/// Every payload has a size known when this module is compiled: continuations come boxed
/// (``Waiter``). A continuation is a struct of a module built for library evolution, so its size
/// is known only at run time; carried inline it would make the whole enum's layout a run-time
/// one, and every send would pay for metadata lookups and value-witness calls to copy, tag and
/// destroy its item.
enum QueueItem: Sendable {
    /// An action sent through a sink to the node that declared it.
    case send(NodeID, any WorkflowAction)
    /// As `send`; the waiter learns once it is applied and committed (`nil`), or why it was not.
    case sendAndWait(NodeID, any WorkflowAction, Waiter<SendError?>)
    /// An action for a node (a worker's output).
    case work(any QueuedWork)
    /// New root props (`update(workflow:)`).
    case updateRoot(any Sendable)
    /// Start calling a rendering callback (current rendering first).
    case observe(UInt64, @Sendable (Any) -> Void)
    /// Stop calling a rendering callback.
    case unobserve(UInt64)
    /// The consumer acknowledged root outputs up to this sequence (durable hosts).
    case acknowledge(UInt64)
    /// Commit what is pending (durable hosts); resumes once it is committed and released.
    case flush(Waiter<Done>?)
    /// End the tree; `completion` resumes when every worker and side effect has ended.
    case stop(Waiter<Done>?)
    /// The journal committed every entry up to this sequence in the background.
    case committed(UInt64)
    /// The journal could not commit in the background: the host stops.
    case journalFailed(any Error)
    /// A control request for the host's instance (rule O2; durable hosts).
    case control(ControlCommand)
}

/// What an awaited item's waiter returns when nobody resumed it before it was dropped.
protocol WaiterValue: Sendable {
    static var abandoned: Self { get }
}

extension Optional: WaiterValue where Wrapped == SendError {
    /// A send whose host went away before answering was not applied.
    static var abandoned: SendError? { SendError(reason: .hostStopped) }
}

/// What a flush or a stop returns: only that it is done.
struct Done: WaiterValue {
    static var abandoned: Done { Done() }
}

/// A client awaiting a queued item, in a box of known size for ``QueueItem``: resumed exactly
/// once. It holds an `UnsafeContinuation`, which a second resume would corrupt and which nothing
/// checks; this type makes the checks a `CheckedContinuation` would (whose own object and type
/// lookups cost every awaited action): ``resume(returning:)`` resumes the first time only and
/// stops the program on a second, and a waiter dropped without being resumed resumes its client
/// with ``WaiterValue/abandoned`` instead of leaving it waiting forever.
final class Waiter<Value: WaiterValue>: Sendable {
    private let continuation: UnsafeContinuation<Value, Never>
    private let resumed = Atomic(false)

    private init(_ continuation: UnsafeContinuation<Value, Never>) {
        self.continuation = continuation
    }

    /// Suspends the calling task, hands `enqueue` the waiter that resumes it, and returns what
    /// the waiter is resumed with: the one way to make a waiter (nothing else sees its
    /// continuation).
    @inline(__always)
    static func wait(_ enqueue: (Waiter<Value>) -> Void) async -> Value {
        await withUnsafeContinuation { continuation in enqueue(Waiter(continuation)) }
    }

    /// Resumes the client with `value`; called once.
    func resume(returning value: Value) {
        let (exchanged, _) = resumed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        precondition(exchanged, "a waiter was resumed twice")
        continuation.resume(returning: value)
    }

    deinit {
        if !resumed.load(ordering: .acquiring) { continuation.resume(returning: Value.abandoned) }
    }
}

extension Waiter where Value == Done {
    /// Resumes the client of a flush or a stop; called once.
    func resume() { resume(returning: Done()) }
}

/// What happened to a queued action.
enum WorkOutcome: Equatable {
    case applied
    case discarded(DiscardReason)
}

/// An action waiting to be applied to one node.
protocol QueuedWork: Sendable, CustomStringConvertible {
    /// The node it is for.
    var nodeID: NodeID { get }
    /// Where it came from.
    var origin: ActionOrigin { get }
    /// Applies it to `node` (on the thread running the host), with its cascade.
    func apply(to node: any AnyWorkflowNode) -> WorkOutcome
}

/// A worker's output, waiting to be turned into an action by the worker's current output map.
struct WorkerDelivery<Value: Sendable>: QueuedWork {
    let nodeID: NodeID
    let recordID: UInt64
    let value: Value
    let origin: ActionOrigin

    func apply(to node: any AnyWorkflowNode) -> WorkOutcome {
        node.deliverWorkerOutput(recordID: recordID, value: value)
    }

    var description: String { "output of a worker: \(Value.self)" }
}
