import Synchronization
import WorkflowLocks

/// What a feedback does: it receives every `(event, state)` pair in order (the state right after
/// the event was reduced) and may send new events back into the loop (rule F1).
public struct Feedback<State: Sendable, Event: Sendable>: Sendable {
    /// Runs until `input` ends (the loop stopped) or the task is cancelled.
    let run: @Sendable (_ input: AsyncStream<Reduced<State, Event>>, _ send: @escaping @Sendable (Event) -> Void) async -> Void

    /// A feedback from its full behaviour: read `input`, call `send`.
    public init(_ run: @escaping @Sendable (_ input: AsyncStream<Reduced<State, Event>>, _ send: @escaping @Sendable (Event) -> Void) async -> Void) {
        self.run = run
    }

    /// What happens to a running effect when its trigger fires again.
    public typealias Overlap = FeedbackOverlap

    /// Runs `effect` for every event that `trigger` maps to a value; its result (if any) is sent.
    public static func onEvent<Value: Sendable>(
        _ trigger: @escaping @Sendable (Event) -> Value?, overlap: Overlap = .latestWins,
        effect: @escaping @Sendable (Value, State) async -> Event?
    ) -> Feedback {
        Feedback { input, send in
            let runner = EffectRunner<Event>(overlap: overlap, send: send)
            for await reduced in input {
                if let value = trigger(reduced.event) {
                    let state = reduced.state
                    runner.trigger { await effect(value, state) }
                }
            }
            runner.cancel()
        }
    }

    /// Runs `effect` each time `predicate` becomes true (it was false, or this is the first state).
    public static func whenBecomesTrue(
        _ predicate: @escaping @Sendable (State) -> Bool, overlap: Overlap = .firstWins,
        effect: @escaping @Sendable (State) async -> Event?
    ) -> Feedback {
        Feedback { input, send in
            let runner = EffectRunner<Event>(overlap: overlap, send: send)
            var was = false
            for await reduced in input {
                let now = predicate(reduced.state)
                if now && !was {
                    let state = reduced.state
                    runner.trigger { await effect(state) }
                }
                was = now
            }
            runner.cancel()
        }
    }

    /// Runs `effect` each time the value `select` reads from the state changes.
    public static func whenChanges<Value: Equatable & Sendable>(
        _ select: @escaping @Sendable (State) -> Value, overlap: Overlap = .latestWins,
        effect: @escaping @Sendable (Value) async -> Event?
    ) -> Feedback {
        Feedback { input, send in
            let runner = EffectRunner<Event>(overlap: overlap, send: send)
            var last: Value?
            for await reduced in input {
                let value = select(reduced.state)
                if value != last {
                    last = value
                    runner.trigger { await effect(value) }
                }
            }
            runner.cancel()
        }
    }

    /// Observes every pair without sending events (logging, analytics).
    public static func observing(_ observe: @escaping @Sendable (Reduced<State, Event>) -> Void) -> Feedback {
        Feedback { input, _ in
            for await reduced in input { observe(reduced) }
        }
    }
}

/// What happens to a running effect when its trigger fires again.
public enum FeedbackOverlap: Sendable, Hashable {
    /// Cancel the running effect and start the new one.
    case latestWins
    /// Ignore the new trigger while an effect runs.
    case firstWins
}

/// Runs one effect at a time with latest-wins or first-wins overlap.
final class EffectRunner<Event: Sendable>: Sendable {
    private let overlap: FeedbackOverlap
    private let send: @Sendable (Event) -> Void
    private let current = Lock<(task: Task<Void, Never>?, generation: UInt64)>((nil, 0))

    init(overlap: FeedbackOverlap, send: @escaping @Sendable (Event) -> Void) {
        self.overlap = overlap
        self.send = send
    }

    func trigger(_ effect: @escaping @Sendable () async -> Event?) {
        current.withLock { current in
            let previous = current.task
            if let previous {
                switch overlap {
                case .firstWins: return
                case .latestWins: previous.cancel()
                }
            }
            current.generation += 1
            let generation = current.generation, send = self.send
            current.task = Task { [weak self] in
                // Latest wins: the cancelled effect winds down before the new one starts, so
                // effects never overlap and run in the order of their triggers.
                await previous?.value
                let event = await effect()
                if let event, !Task.isCancelled { send(event) }
                self?.finished(generation)
            }
        }
    }

    private func finished(_ generation: UInt64) {
        current.withLock { current in
            if current.generation == generation { current.task = nil }
        }
    }

    func cancel() {
        current.withLock { $0.task?.cancel() }
    }
}
