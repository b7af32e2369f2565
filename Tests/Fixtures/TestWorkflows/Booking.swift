import DurableWorkflow
import Foundation
import Workflow
import WorkflowLocks

/// The outside world of a booking: a desk that reserves, confirms and releases, recording every
/// call by its task's idempotency key (and attempt), optionally into a file shared by processes
/// (one line per call: `<verb> <key> <attempt>`).
public final class BookingDesk: Sendable {
    private let calls = Lock<[(verb: String, key: String)]>([])
    private let ledger: FileHandle?
    /// How long each call takes.
    private let latency: Duration

    public init(ledger path: String? = nil, latency: Duration = .milliseconds(5)) {
        if let path {
            if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
            ledger = FileHandle(forWritingAtPath: path)
            ledger?.seekToEndOfFile()
        } else {
            ledger = nil
        }
        self.latency = latency
    }

    /// The calls made so far, in order.
    public var made: [(verb: String, key: String)] { calls.withLock { $0 } }

    public func call(_ verb: String, _ attempt: TaskAttempt) async throws -> String {
        try await Task.sleep(for: latency)
        let key = attempt.idempotencyKey ?? "-"
        calls.withLock { $0.append((verb, key)) }
        ledger?.write(Data("\(verb) \(key) \(attempt.number)\n".utf8))
        return "\(verb)-ok"
    }

    /// The calls a ledger file holds: `(verb, key, attempt)`.
    public static func read(ledger path: String) -> [(verb: String, key: String, attempt: Int)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, let attempt = Int(parts[2]) else { return nil }
            return (String(parts[0]), String(parts[1]), attempt)
        }
    }
}

/// A booking that handles cancel requests (rule O2): it reserves (a task), holds the reservation
/// until a durable timer fires, then confirms (a task) and finishes. A cancel request makes it
/// release the reservation (a cleanup task; a reserve attempt may be in flight) and then finish,
/// cancelled. A `Notifier` child runs while the booking holds, and
/// records the cancel request it is handed (the booking's policy propagates it).
public struct Booking: FinishingWorkflow, CancellableWorkflow, Codable, Sendable {
    /// How long the reservation is held before it is confirmed.
    public var holdMilliseconds: Int
    /// Whether the booking hands a cancel request to its children.
    public var propagates: Bool

    public init(holdMilliseconds: Int = 200, propagates: Bool = true) {
        self.holdMilliseconds = holdMilliseconds
        self.propagates = propagates
    }

    public enum Phase: String, Codable, Sendable {
        case reserving, holding, confirming, releasing, done
    }

    public struct State: Codable, Equatable, Sendable {
        public var phase = Phase.reserving
        public var reservation: String?
        public var holdUntil: WallTime?
        /// How many times the hold's timer fired (exactly once, paused or not).
        public var timerFired = 0
        public var cancelRequested: CancellationRequest?
        public var released = false
        /// Outputs of the `Notifier` child (it emits one when a cancel request reaches it).
        public var childrenNotified = 0
    }

    public enum Outcome: String, Codable, Sendable, Equatable {
        case confirmed, cancelled
    }

    public typealias Output = Outcome

    public struct Rendering: Sendable {
        public let state: State
    }

    public enum Event: DurableAction, Equatable {
        public typealias WorkflowType = Booking
        public static let tag = "booking.event"
        case reserved(String)
        case holdExpired
        case confirmed
        case released
        case notified

        public func apply(toState state: inout State, context: ApplyContext<Booking>) -> Outcome? {
            switch self {
            case .reserved(let receipt):
                state.reservation = receipt
                guard state.phase == .reserving else { return nil }
                state.phase = .holding
                state.holdUntil = context.now + .milliseconds(context.props.holdMilliseconds)
                return nil
            case .holdExpired:
                state.timerFired += 1
                state.holdUntil = nil
                if state.phase == .holding { state.phase = .confirming }
                return nil
            case .confirmed:
                state.phase = .done
                return .confirmed
            case .released:
                state.released = true
                state.phase = .done
                return .cancelled
            case .notified:
                state.childrenNotified += 1
                return nil
            }
        }
    }

    public func makeInitialState() -> State { State() }

    public func cancellationRequested(_ request: CancellationRequest, state: inout State) -> Outcome? {
        state.cancelRequested = request
        switch state.phase {
        case .reserving, .holding, .confirming:
            // A reserve attempt may have reached the desk: release (the desk's release is idempotent).
            state.phase = .releasing
            state.holdUntil = nil
            return nil
        case .releasing, .done:
            return nil
        }
    }

    public var childCancellation: ChildCancellation { propagates ? .propagate : .none }

    public func render(state: State, context: RenderContext<Booking>) -> Rendering {
        let desk = context.dependency(BookingDesk.self)
        let policy = RetryPolicy(initialInterval: .milliseconds(20), maximumAttempts: 5)
        func call(_ verb: String) -> @Sendable (TaskAttempt) async throws -> String {
            { attempt in
                guard let desk else { throw CancellationError() }
                return try await desk.call(verb, attempt)
            }
        }
        switch state.phase {
        case .reserving:
            context.runTask(key: "reserve", retry: policy, operation: call("reserve")) { Event.reserved((try? $0.get()) ?? "failed") }
        case .holding:
            if let until = state.holdUntil { context.runTimer(key: "hold", fireAt: until) { Event.holdExpired } }
            context.render(Notifier(), key: "notifier") { _ in Event.notified }
        case .confirming:
            context.runTask(key: "confirm", retry: policy, operation: call("confirm")) { _ in Event.confirmed }
        case .releasing:
            context.runTask(key: "release", retry: policy, operation: call("release")) { _ in Event.released }
        case .done:
            break
        }
        return Rendering(state: state)
    }

    public static var actions: ActionRegistry {
        var registry = ActionRegistry(Event.self, Notifier.Event.self)
        registry.registerTask(String.self)
        return registry
    }

    public static func configuration(desk: BookingDesk, mode: DurableConfiguration.Mode = .strict) -> DurableConfiguration {
        var configuration = DurableConfiguration(mode: mode, actions: actions, snapshotEvery: 5)
        configuration.host.provide(desk)
        return configuration
    }
}

/// A child of a holding booking that records the cancel request it is handed.
public struct Notifier: CancellableWorkflow, Codable, Sendable {
    public init() {}

    public struct State: Codable, Equatable, Sendable {
        public var cancelSeen = 0
    }

    public enum Event: DurableAction, Equatable {
        public typealias WorkflowType = Notifier
        public static let tag = "notifier.event"
        case ping
        public func apply(toState state: inout State) -> Int? { nil }
    }

    public typealias Output = Int

    public func makeInitialState() -> State { State() }

    public func cancellationRequested(_ request: CancellationRequest, state: inout State) -> Int? {
        state.cancelSeen += 1
        return state.cancelSeen
    }

    public func render(state: State, context: RenderContext<Notifier>) -> State { state }
}

/// A workflow that never ends: a durable timer fires every `periodMilliseconds` and counts.
public struct Ticker: Workflow, Codable, Sendable {
    public var periodMilliseconds: Int

    public init(periodMilliseconds: Int = 200) { self.periodMilliseconds = periodMilliseconds }

    public struct State: Codable, Equatable, Sendable {
        public var ticks = 0
        public var next: WallTime?
    }

    public enum Tick: DurableAction, Equatable {
        public typealias WorkflowType = Ticker
        public static let tag = "ticker.tick"
        case tick

        public func apply(toState state: inout State, context: ApplyContext<Ticker>) -> Never? {
            state.ticks += 1
            state.next = context.now + .milliseconds(context.props.periodMilliseconds)
            return nil
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<Ticker>) -> Int {
        context.runTimer(key: "tick", fireAt: state.next ?? WallTime(nanosecondsSinceEpoch: 0)) { Tick.tick }
        return state.ticks
    }

    public static var actions: ActionRegistry { ActionRegistry(Tick.self) }
}
