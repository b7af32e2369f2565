import DurableWorkflow
import Workflow

/// A checkout that finishes: `Open` (its first action) sets the number of items, each `Pay`
/// adds to what was paid and reports progress, and the payment that reaches `total` emits the
/// receipt, its final output.
public struct Checkout: FinishingWorkflow, Codable, Sendable {
    public var total: Int

    public init(total: Int) { self.total = total }

    public struct State: Codable, Equatable, Sendable {
        public var items = 0
        public var paid = 0
        public init(items: Int = 0, paid: Int = 0) {
            self.items = items
            self.paid = paid
        }
    }

    public struct Receipt: Codable, Equatable, Sendable {
        public var items: Int
        public var paid: Int
        public init(items: Int, paid: Int) {
            self.items = items
            self.paid = paid
        }
    }

    public enum Output: Equatable, Sendable {
        case paidSoFar(Int)
        case receipt(Receipt)
    }

    public struct Rendering: Sendable {
        public let state: State
        public let open: Sink<Open>
        public let pay: Sink<Pay>
    }

    public struct Open: DurableAction, Equatable {
        public typealias WorkflowType = Checkout
        public static let tag = "checkout.open"
        public var items: Int

        public init(items: Int) { self.items = items }

        public func apply(toState state: inout State) -> Output? {
            state.items = items
            return nil
        }
    }

    public struct Pay: DurableAction, Equatable {
        public typealias WorkflowType = Checkout
        public static let tag = "checkout.pay"
        public var amount: Int

        public init(amount: Int) { self.amount = amount }

        public func apply(toState state: inout State, context: ApplyContext<Checkout>) -> Output? {
            state.paid += amount
            if state.paid >= context.props.total { return .receipt(Receipt(items: state.items, paid: state.paid)) }
            return .paidSoFar(state.paid)
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<Checkout>) -> Rendering {
        Rendering(state: state, open: context.makeSink(of: Open.self), pay: context.makeSink(of: Pay.self))
    }

    public func isFinal(_ output: Output) -> Bool {
        if case .receipt = output { return true }
        return false
    }

    /// The registry holding this workflow's actions.
    public static var actions: ActionRegistry { ActionRegistry(Open.self, Pay.self) }
}
