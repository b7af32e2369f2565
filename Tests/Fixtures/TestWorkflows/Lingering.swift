import Dispatch
import DurableWorkflow
import Workflow

/// A durable workflow running one worker that takes `seconds` to end once cancelled (as a
/// worker blocked in a call that does not heed cancellation): what a host that stopped still
/// has running for a while.
public struct Lingering: Workflow, Codable, Sendable {
    public var seconds: Double

    public init(seconds: Double) { self.seconds = seconds }

    public func makeInitialState() -> Int { 0 }

    public func render(state: Int, context: RenderContext<Lingering>) {
        context.run(SlowToEnd(seconds: seconds), key: "slow")
    }

    /// What the worker would emit (it never does).
    public struct Tick: DurableAction {
        public typealias WorkflowType = Lingering
        public static let tag = "lingering.tick"
        public func apply(toState state: inout Int, context: ApplyContext<Lingering>) -> Never? {
            state += 1
            return nil
        }
    }

    public static var actions: ActionRegistry { ActionRegistry(Tick.self) }

    /// Emits nothing, and ends `seconds` after its first wait began, cancelled or not.
    public struct SlowToEnd: Worker {
        let seconds: Double

        public func run() -> Outputs { Outputs(seconds: seconds) }

        public struct Outputs: AsyncSequence, Sendable {
            public typealias Element = Tick
            public typealias Failure = Never
            let seconds: Double

            public func makeAsyncIterator() -> Iterator { Iterator(seconds: seconds) }

            public struct Iterator: AsyncIteratorProtocol {
                let seconds: Double

                public mutating func next(isolation actor: isolated (any Actor)?) async -> Tick? {
                    let seconds = self.seconds
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume() }
                    }
                    return nil
                }

                public mutating func next() async -> Tick? {
                    await next(isolation: nil)
                }
            }
        }
    }
}
