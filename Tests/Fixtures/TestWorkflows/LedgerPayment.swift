import DurableWorkflow
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Workflow

/// A bank that writes a line `KEY ATTEMPT` to a ledger file as each call reaches it (appended
/// with one `write`, so several processes share the file), then takes a time of its own to
/// answer: from `slowest / 4` to `slowest`, fixed per idempotency key. The first attempt of
/// every seventh key fails (a retryable error); the others answer with a receipt.
public final class LedgerBank: Sendable {
    private let descriptor: Int32
    private let slowest: Duration

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String { "the bank is unavailable" }
    }

    public init(ledger path: String, slowest: Duration) {
        descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        precondition(descriptor >= 0, "cannot open the ledger \(path)")
        self.slowest = slowest
    }

    deinit { close(descriptor) }

    public func authorize(_ attempt: TaskAttempt, amount: Int) async throws -> String {
        let key = attempt.idempotencyKey ?? "-"
        var line = "\(key) \(attempt.number)\n"
        line.withUTF8 { bytes in _ = write(descriptor, bytes.baseAddress, bytes.count) }
        let spread = LedgerBank.spread(of: key)
        try await Task.sleep(for: slowest / 4 + (slowest * 3 / 4) * (Double(spread) / 1_000))
        if spread % 7 == 0, attempt.number == 1 { throw Unavailable() }
        return "auth-\(amount)-\(attempt.number)"
    }

    /// 0 to 999, from the key (FNV-1a): the same in every process.
    static func spread(of key: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % 1_000)
    }

    /// The calls in a ledger file: how many times each `KEY ATTEMPT` reached the bank.
    public static func calls(in path: String) -> [String: Int] {
        guard let file = fopen(path, "r") else { return [:] }
        defer { fclose(file) }
        var counts: [String: Int] = [:]
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!).trimmingSuffix("\n")
            counts[text, default: 0] += 1
        }
        free(line)
        return counts
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

/// A payment authorized through a `LedgerBank` dependency as a task with retries; it finishes
/// with the authorization.
public struct LedgerPayment: FinishingWorkflow, Codable, Sendable {
    public var amount: Int

    public init(amount: Int) { self.amount = amount }

    /// The authorization, or "declined".
    public typealias Output = String
    public typealias Rendering = State

    public struct State: Codable, Equatable, Sendable {
        public var authorization: String?
    }

    public struct Authorized: DurableAction {
        public typealias WorkflowType = LedgerPayment
        public static let tag = "ledger-payment.authorized"
        public var authorization: String?

        public func apply(toState state: inout State) -> String? {
            state.authorization = authorization
            return authorization ?? "declined"
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<LedgerPayment>) -> State {
        guard state.authorization == nil else { return state }
        let bank = context.dependency(LedgerBank.self), amount = self.amount
        let policy = RetryPolicy(initialInterval: .milliseconds(50), backoffCoefficient: 2, maximumAttempts: 5)
        context.runTask(key: "authorize", retry: policy, operation: { attempt async throws -> String in
            guard let bank else { throw LedgerBank.Unavailable() }
            return try await bank.authorize(attempt, amount: amount)
        }) { (result: Result<String, TaskFailure>) in
            Authorized(authorization: try? result.get())
        }
        return state
    }

    public static var actions: ActionRegistry {
        var registry = ActionRegistry(Authorized.self)
        registry.registerTask(String.self)
        return registry
    }
}
