import DurableWorkflow
import Foundation
import Workflow
import WorkflowSignals

/// An order, as a service runs it: placed with its first action, a child workflow per line item
/// that reserves stock (a task), then a payment (a task with retries whose attempts share one
/// idempotency key), then a shipment confirmed by a signal another process posts. A durable
/// timer cancels an order not paid by its deadline; a declined payment cancels it too; so does
/// an operator's cancel request (`wfctl cancel`), after refunding a payment taken. The order
/// finishes with its outcome, logged.
public struct Order: FinishingWorkflow, Codable, Sendable {
    public let id: String
    /// Quantities by SKU.
    public let items: [String: Int]
    /// Cents to charge.
    public let amount: Int
    /// Seconds after placement by which the order must be paid.
    public let payWithinSeconds: Int
    /// The signal that confirms the shipment (posted by the warehouse, another process).
    public let shipment: SignalID

    public init(id: String, items: [String: Int], amount: Int, payWithinSeconds: Int = 3600) {
        self.id = id
        self.items = items
        self.amount = amount
        self.payWithinSeconds = payWithinSeconds
        self.shipment = Self.shipmentSignal(for: id)
    }

    /// The shipment signal of order `id`: the same in every process (a stable name, which
    /// `wfctl signals` shows).
    public static func shipmentSignal(for id: String) -> SignalID {
        SignalID(stableName: "shipment:\(id)")
    }

    public enum Outcome: Codable, Equatable, Sendable {
        case shipped(receipt: String, carrier: String)
        case cancelled(reason: String)
    }

    public typealias Output = Outcome

    public struct State: Codable, Equatable, Sendable {
        public var placedAt: WallTime?
        public var payBy: WallTime?
        public var reserved: [String] = []
        public var receipt: String?
        public var outcome: Outcome?
        /// Why the order is being cancelled while its payment is refunded.
        public var refunding: String?
        public init() {}
    }

    public struct Rendering: Sendable {
        public let state: State
    }

    /// The first action: the order is placed (its payment deadline set from the logged time).
    public struct Place: DurableAction {
        public typealias WorkflowType = Order
        public static let tag = "order.place"
        public init() {}
        public func apply(toState state: inout State, context: ApplyContext<Order>) -> Outcome? {
            guard state.placedAt == nil else { return nil }
            state.placedAt = context.now
            state.payBy = context.now + .seconds(context.props.payWithinSeconds)
            return nil
        }
    }

    /// A line item's stock was reserved (applied in the child's output cascade).
    struct Reserved: WorkflowAction {
        typealias WorkflowType = Order
        let sku: String
        func apply(toState state: inout State) -> Outcome? {
            if !state.reserved.contains(sku) { state.reserved.append(sku) }
            state.reserved.sort()
            return nil
        }
    }

    /// The payment task ended (applied in the task's output cascade).
    struct Charged: WorkflowAction {
        typealias WorkflowType = Order
        let result: Result<String, TaskFailure>
        func apply(toState state: inout State) -> Outcome? {
            guard state.outcome == nil else { return nil }
            switch result {
            case .success(let receipt):
                state.receipt = receipt
                return nil
            case .failure(let failure):
                state.outcome = .cancelled(reason: "payment failed: \(failure.message)")
                return state.outcome
            }
        }
    }

    /// The payment deadline passed (logged with origin `.timer`).
    public struct PaymentDue: DurableAction {
        public typealias WorkflowType = Order
        public static let tag = "order.payment-due"
        public func apply(toState state: inout State) -> Outcome? {
            guard state.receipt == nil, state.outcome == nil else { return nil }
            state.outcome = .cancelled(reason: "not paid in time")
            return state.outcome
        }
    }

    /// The warehouse confirmed the shipment (logged with origin `.signal`).
    public struct Shipped: DurableAction {
        public typealias WorkflowType = Order
        public static let tag = "order.shipped"
        public let carrier: String
        public func apply(toState state: inout State) -> Outcome? {
            guard let receipt = state.receipt, state.outcome == nil else { return nil }
            state.outcome = .shipped(receipt: receipt, carrier: carrier)
            return state.outcome
        }
    }

    /// The refund of a cancelled order's payment ended (applied in the task's output cascade).
    struct Refunded: WorkflowAction {
        typealias WorkflowType = Order
        func apply(toState state: inout State) -> Outcome? {
            guard let reason = state.refunding, state.outcome == nil else { return nil }
            state.outcome = .cancelled(reason: reason)
            return state.outcome
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<Order>) -> Rendering {
        guard state.placedAt != nil, state.outcome == nil else { return Rendering(state: state) }
        let services = context.dependency(OrderServices.self)
        if state.refunding != nil, let receipt = state.receipt {
            // Cancelled after the payment: the refund first, then the order ends.
            let (order, amount) = (id, amount)
            context.runTask(key: "refund", retry: RetryPolicy(initialInterval: .milliseconds(50), maximumAttempts: nil),
                            operation: { attempt in
                                guard let services else { throw ServicesMissing() }
                                try await services.payments.refund(order: order, cents: amount, receipt: receipt, attempt: attempt)
                                return receipt
                            }) { _ in Refunded() }
            return Rendering(state: state)
        }
        for (sku, quantity) in items.sorted(by: { $0.key < $1.key }) where !state.reserved.contains(sku) {
            context.render(LineItem(order: id, sku: sku, quantity: quantity), key: sku) { Reserved(sku: $0) }
        }
        if state.reserved.count == items.count && state.receipt == nil {
            let (order, amount) = (id, amount)
            context.runTask(key: "payment", retry: RetryPolicy(initialInterval: .milliseconds(50), maximumAttempts: 4,
                                                                   attemptTimeout: .seconds(5), isRetryable: { !($0 is CardDeclined) }),
                            operation: { attempt in
                                guard let services else { throw ServicesMissing() }
                                return try await services.payments.charge(order: order, cents: amount, attempt: attempt)
                            }) { Charged(result: $0) }
        }
        if state.receipt == nil, let payBy = state.payBy {
            context.runTimer(key: "pay-by", fireAt: payBy) { PaymentDue() }
        }
        if state.receipt != nil {
            context.awaitSignal(shipment) { delivery in Shipped(carrier: (try? delivery.decode(String.self)) ?? "unknown") }
        }
        return Rendering(state: state)
    }

    /// The actions of an order and its children (and its tasks).
    public static var actions: ActionRegistry {
        var registry = ActionRegistry(Place.self, PaymentDue.self, Shipped.self)
        registry.registerTask(String.self)
        registry.registerTask(Int.self)
        return registry
    }
}

extension Order: CancellableWorkflow {
    /// An operator's cancel request: an unpaid order ends at once, cancelled; a paid one refunds
    /// its payment first (a task), then ends cancelled. A shipped order has ended already.
    public func cancellationRequested(_ request: CancellationRequest, state: inout State) -> Outcome? {
        guard state.outcome == nil, state.refunding == nil else { return nil }
        let reason = "cancelled by an operator" + (request.reason.map { ": \($0)" } ?? "")
        guard state.receipt != nil else {
            state.outcome = .cancelled(reason: reason)
            return state.outcome
        }
        state.refunding = reason
        return nil
    }
}

/// One line item: reserves its stock as a task, then emits its SKU.
public struct LineItem: Workflow, Codable, Sendable {
    public let order: String
    public let sku: String
    public let quantity: Int

    public typealias Output = String

    public struct State: Codable, Equatable, Sendable {
        public var reservation: Int?
    }

    struct Reserved: WorkflowAction {
        typealias WorkflowType = LineItem
        let result: Result<Int, TaskFailure>
        func apply(toState state: inout State, context: ApplyContext<LineItem>) -> String? {
            guard case .success(let reservation) = result else { return nil }
            state.reservation = reservation
            return context.props.sku
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<LineItem>) -> State {
        if state.reservation == nil {
            let services = context.dependency(OrderServices.self)
            let (order, sku, quantity) = (self.order, self.sku, self.quantity)
            context.runTask(key: "reserve", retry: RetryPolicy(initialInterval: .milliseconds(20), maximumAttempts: nil),
                            operation: { attempt in
                                guard let services else { throw ServicesMissing() }
                                return try await services.inventory.reserve(order: order, sku: sku, quantity: quantity, attempt: attempt)
                            }) { Reserved(result: $0) }
        }
        return state
    }
}

/// What an order's tasks call: the service provides it (`HostConfiguration.provide`).
public struct OrderServices: Sendable {
    public let inventory: any Inventory
    public let payments: any Payments
    public init(inventory: any Inventory, payments: any Payments) {
        self.inventory = inventory
        self.payments = payments
    }
}

/// Stock reservations; the attempt's idempotency key makes a repeated call return the first answer.
public protocol Inventory: Sendable {
    func reserve(order: String, sku: String, quantity: Int, attempt: TaskAttempt) async throws -> Int
}

/// Card payments; the attempt's idempotency key makes a repeated charge return the first receipt.
public protocol Payments: Sendable {
    func charge(order: String, cents: Int, attempt: TaskAttempt) async throws -> String
    /// Refunds the charge of `receipt` (a cancelled order); a repeated refund (same key) does nothing more.
    func refund(order: String, cents: Int, receipt: String, attempt: TaskAttempt) async throws
}

extension Payments {
    /// Payments that keep no record of refunds.
    public func refund(order: String, cents: Int, receipt: String, attempt: TaskAttempt) async throws {}
}

/// A payment that must not be retried.
public struct CardDeclined: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the card was declined" }
}

/// A tool replaying an order without the service's dependencies (its attempts never run).
struct ServicesMissing: Error {}

