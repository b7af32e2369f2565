import Dispatch
import DurableWorkflow
import Workflow
import WorkflowLocks

/// What a payment's attempts do, scripted per attempt number; it records every call.
public final class Gateway: Sendable {
    public enum Step: Sendable {
        case succeed
        case fail(GatewayError)
        /// Never returns (until cancelled, if `cooperative`).
        case hang(cooperative: Bool)
        /// Succeeds after a real-time delay (whatever the host's clock).
        case succeedAfter(Duration)
    }

    public struct GatewayError: Error, Equatable, CustomStringConvertible {
        public var code: Int
        public init(code: Int) { self.code = code }
        public var description: String { "gateway error \(code)" }
    }

    private let state: Lock<(steps: [Step], calls: [TaskAttempt])>

    public init(_ steps: [Step]) { state = Lock((steps, [])) }

    /// The attempts made so far.
    public var calls: [TaskAttempt] { state.withLock { $0.calls } }

    public func charge(_ attempt: TaskAttempt) async throws -> String {
        let step = state.withLock { state -> Step in
            state.calls.append(attempt)
            return state.steps.isEmpty ? .succeed : state.steps.removeFirst()
        }
        switch step {
        case .succeed: return "receipt-\(attempt.number)"
        case .succeedAfter(let delay):
            try await Task.sleep(for: delay)
            return "receipt-\(attempt.number)"
        case .fail(let error): throw error
        case .hang(let cooperative):
            if cooperative {
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            // Deaf to cancellation, without holding a thread: resumed an hour from now.
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 3600) { continuation.resume() }
            }
            throw CancellationError()
        }
    }
}

/// A payment charged through a `Gateway` dependency as a task with retries; its state keeps the
/// outcome.
public struct Payment: Workflow, Codable, Sendable {
    public var maximumAttempts: Int
    public var timeoutSeconds: Int?
    /// Error codes the policy does not retry.
    public var finalCodes: [Int]

    public init(maximumAttempts: Int = 3, timeoutSeconds: Int? = nil, finalCodes: [Int] = []) {
        self.maximumAttempts = maximumAttempts
        self.timeoutSeconds = timeoutSeconds
        self.finalCodes = finalCodes
    }

    public struct State: Codable, Equatable, Sendable {
        public var receipt: String?
        public var failure: TaskFailure?
    }

    public struct Rendering: Sendable {
        public let state: State
        public let progress: TaskWorkflow<String>.State?
    }

    public struct Charged: DurableAction {
        public typealias WorkflowType = Payment
        public static let tag = "payment.charged"
        public var receipt: String?
        public var failure: TaskFailure?

        public init(result: Result<String, TaskFailure>) {
            switch result {
            case .success(let receipt): self.receipt = receipt
            case .failure(let failure): self.failure = failure
            }
        }

        public func apply(toState state: inout State) -> Never? {
            state.receipt = receipt
            state.failure = failure
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<Payment>) -> Rendering {
        guard state.receipt == nil, state.failure == nil else { return Rendering(state: state, progress: nil) }
        // The tree's shape never depends on a dependency being there: a tool that replays the
        // instance without one rebuilds the same tree (its attempts just never run).
        let gateway = context.dependency(Gateway.self)
        let finalCodes = self.finalCodes
        let policy = RetryPolicy(
            initialInterval: .seconds(1), backoffCoefficient: 2, maximumAttempts: maximumAttempts,
            attemptTimeout: timeoutSeconds.map { .seconds($0) },
            isRetryable: { error in !((error as? Gateway.GatewayError).map { finalCodes.contains($0.code) } ?? false) })
        let progress = context.runTask(key: "charge", retry: policy, operation: { attempt in
            guard let gateway else { throw Gateway.GatewayError(code: 0) }
            return try await gateway.charge(attempt)
        }) {
            Charged(result: $0)
        }
        return Rendering(state: state, progress: progress)
    }

    public static var actions: ActionRegistry {
        var registry = ActionRegistry(Charged.self)
        registry.registerTask(String.self)
        return registry
    }
}
