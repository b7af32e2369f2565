/// Asynchronous work declared from `render`, whose outputs become actions.
///
/// A worker runs while the render passes keep declaring it (keyed by its type and a key); it
/// starts after the render pass that first declares it, is cancelled at the first pass that no
/// longer does, and is restarted when a pass declares a worker that is not ``isEquivalent(to:)``
/// the running one. A worker that has not started yet (the effects of the pass that declared
/// it are held: during a durable host's replay, or until its grouped commit) starts as the latest
/// pass declared it. Its outputs are delivered in order, each as its own action and render pass,
/// never during a render pass, and none is dropped while the worker is still declared.
public protocol Worker<Output>: Sendable {
    /// What the worker emits.
    associatedtype Output: Sendable
    /// The sequence of outputs `run()` produces.
    associatedtype Outputs: AsyncSequence<Output, Never>

    /// Starts the work. Cancellation of the surrounding task means the worker was ended.
    func run() -> Outputs

    /// Whether `other`, declared in a later render pass, is the same work (no restart).
    /// The default says yes.
    func isEquivalent(to other: Self) -> Bool
}

extension Worker {
    public func isEquivalent(to other: Self) -> Bool { true }
}

/// A worker that holds something outside the runtime (such as a durable signal consumer) and must
/// learn why it ended: because render passes stopped declaring it (let go of it), or because its
/// host stopped (keep it: a resumed durable host will declare the worker again).
package protocol EndObservingWorker: Worker {
    /// Called on the thread running the host, once, after a started worker was cancelled.
    func didEnd(idempotencyKey: String?, becauseHostStopped: Bool)
}

extension Worker where Self: Equatable {
    public func isEquivalent(to other: Self) -> Bool { self == other }
}

/// A worker that runs one async operation and emits its result once.
public struct AsyncOperationWorker<Output: Sendable>: Worker {
    private let operation: @Sendable () async -> Output
    private let identity: String

    /// A worker whose output is the value of `operation`; workers with equal `identity` are
    /// equivalent.
    public init(identity: String = "", _ operation: @escaping @Sendable () async -> Output) {
        self.identity = identity
        self.operation = operation
    }

    public func run() -> AsyncStream<Output> {
        let operation = self.operation
        return AsyncStream { continuation in
            let task = Task {
                let value = await operation()
                if !Task.isCancelled { continuation.yield(value) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func isEquivalent(to other: Self) -> Bool { identity == other.identity }
}

/// A worker that emits every element of an async sequence.
public struct AsyncSequenceWorker<Elements: AsyncSequence & Sendable>: Worker
where Elements.Element: Sendable, Elements.Failure == Never {
    private let elements: Elements
    private let identity: String

    /// A worker emitting `elements`; workers with equal `identity` are equivalent.
    public init(identity: String = "", _ elements: Elements) {
        self.identity = identity
        self.elements = elements
    }

    public func run() -> Elements { elements }

    public func isEquivalent(to other: Self) -> Bool { identity == other.identity }
}
