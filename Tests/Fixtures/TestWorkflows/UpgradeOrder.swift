import DurableWorkflow
import Foundation
import Synchronization
import Workflow

// The upgrade suite's order service (issue 58): one workflow, "Upgrade.Order", built once per
// change a deploy makes: every build has the same names, tags and keys unless its change is one
// of them, as two builds of one service over one store have.

/// Where an order is.
public enum OrderStatus: String, Codable, Sendable {
    case open, paid, charged, shipped, expired
}

/// What every build's state holds, whatever its stored form.
public protocol UpgradeOrderState: Codable, Equatable, Sendable {
    init()
    var items: [String] { get set }
    var total: Int { get set }
    var status: OrderStatus { get set }
    var counter: Int { get set }
    var expiresAt: WallTime? { get set }
    var receipt: String? { get set }
    var label: String? { get set }
}

/// The first build's state.
public struct StateV1: UpgradeOrderState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var counter = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public init() {}
}

/// C1: a new optional field.
public struct StateOptionalField: UpgradeOrderState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var counter = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public var note: String?
    public init() {}
}

/// C2: a new non-optional field with a default, not declared.
public struct StateDefaultedField: UpgradeOrderState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var counter = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public var priority = 3
    public init() {}
}

/// C2, declared: the same field as a revision of the state's form.
public struct StateDeclaredField: UpgradeOrderState, VersionedState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var counter = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public var priority = 3
    public static let stateVersion = 2
    public static let stateRevisions: [StateRevision] = [.added("priority", default: 3, in: 2)]
    public init() {}
}

/// C3: `counter` renamed `revision` (its key with it).
public struct StateRenamedField: UpgradeOrderState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var revision = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public var counter: Int {
        get { revision }
        set { revision = newValue }
    }
    public init() {}
}

/// C3, keeping the key: `revision` encoded as "counter".
public struct StateRenamedKeepingKey: UpgradeOrderState {
    public var items: [String] = []
    public var total = 0
    public var status = OrderStatus.open
    public var revision = 0
    public var expiresAt: WallTime?
    public var receipt: String?
    public var label: String?
    public var counter: Int {
        get { revision }
        set { revision = newValue }
    }
    enum CodingKeys: String, CodingKey {
        case items, total, status, revision = "counter", expiresAt, receipt, label
    }
    public init() {}
}

/// How `order.addItem` is encoded by a build.
public enum AddItemForm: Sendable {
    /// `{name, price}`, version 1.
    case first
    /// With a `quantity`, still called version 1 (C10a).
    case quantityUnversioned
    /// With a `quantity`, version 2, and a decoder for version 1 (C10b).
    case quantityVersioned
    /// Version 2 read, version 1 still written (the first step of the rollout).
    case quantityWritingFirst
}

/// One build of the order service: its state, and what it changed.
public protocol UpgradeBuild: Sendable {
    associatedtype State: UpgradeOrderState
    /// The change, as the suite names it (`v1` for the first build).
    static var name: String { get }
    /// The key the charged order renders its packing child under.
    static var childKey: String { get }
    /// What `pay` adds to the total besides the items (C4).
    static func fee(_ context: ApplyContext<UpgradeOrder<Self>>) -> Int
    /// Whether a paid order runs the charge worker.
    static func declaresCharge(_ context: RenderContext<UpgradeOrder<Self>>) -> Bool
    /// Whether a paid order also runs an audit worker (C7).
    static var audits: Bool { get }
    /// Whether the build still knows `order.ship` (C6).
    static var knowsShip: Bool { get }
    static var addItemForm: AddItemForm { get }
    static var versionMarkers: [String: ClosedRange<Int>] { get }
    /// Whether resumes compare recorded digests.
    static var checksDigests: Bool { get }
}

extension UpgradeBuild {
    public static var childKey: String { "packing" }
    public static func fee(_ context: ApplyContext<UpgradeOrder<Self>>) -> Int { 0 }
    public static func declaresCharge(_ context: RenderContext<UpgradeOrder<Self>>) -> Bool { true }
    public static var audits: Bool { false }
    public static var knowsShip: Bool { true }
    public static var addItemForm: AddItemForm { .first }
    public static var versionMarkers: [String: ClosedRange<Int>] { [:] }
    public static var checksDigests: Bool { true }
}

/// How long the outside world (the bank, the label printer) takes to answer: set by the process.
public enum UpgradeOutside {
    private static let delay = Atomic<Int>(3_600_000)
    private static let held = Atomic<Bool>(false)
    /// Milliseconds.
    public static var answersIn: Int {
        get { delay.load(ordering: .relaxed) }
        set { delay.store(newValue, ordering: .relaxed) }
    }
    /// Whether nothing answers until released (a test reads the states a resume left first).
    public static var isHeld: Bool {
        get { held.load(ordering: .relaxed) }
        set { held.store(newValue, ordering: .relaxed) }
    }

    /// Returns once the outside world answers: after it is released, `answersIn` later.
    public static func answer() async throws {
        while isHeld { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(answersIn))
    }
}

public struct UpgradeOrder<Build: UpgradeBuild>: Workflow, Codable, Sendable {
    public static var workflowName: String { "Upgrade.Order" }

    public var id: String
    public var expirySeconds: Int

    public init(id: String, expirySeconds: Int = 3600) {
        self.id = id
        self.expirySeconds = expirySeconds
    }

    public typealias State = Build.State

    public struct Rendering: Sendable {
        public let state: State
        public let addItem: Sink<AddItem>
        public let pay: Sink<Pay>
        public let ship: Sink<Ship>
        public let bump: Sink<Bump>
        public let charged: Sink<Charged>
        public let labelReady: Sink<LabelReady>
    }

    public struct AddItem: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.addItem" }
        public static var version: Int { Build.addItemForm == .quantityVersioned || Build.addItemForm == .quantityWritingFirst ? 2 : 1 }
        public var name: String
        public var price: Int
        public var quantity = 1
        public init(name: String, price: Int) {
            self.name = name
            self.price = price
        }
        enum CodingKeys: String, CodingKey { case name, price, quantity }
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            price = try container.decode(Int.self, forKey: .price)
            if Build.addItemForm != .first { quantity = try container.decode(Int.self, forKey: .quantity) }
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(price, forKey: .price)
            if Build.addItemForm != .first { try container.encode(quantity, forKey: .quantity) }
        }
        /// Version 1's form, read by the build that bumped the version.
        struct First: Codable {
            var name: String
            var price: Int
        }
        public func apply(toState state: inout State, context: ApplyContext<UpgradeOrder>) -> Never? {
            if state.items.isEmpty { state.expiresAt = context.now + .seconds(context.props.expirySeconds) }
            state.items.append(name)
            state.total += price * quantity
            return nil
        }
    }

    public struct Pay: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.pay" }
        public init() {}
        public func apply(toState state: inout State, context: ApplyContext<UpgradeOrder>) -> Never? {
            guard state.status == .open else { return nil }
            state.total += Build.fee(context)
            state.status = .paid
            return nil
        }
    }

    public struct Ship: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.ship" }
        public init() {}
        public func apply(toState state: inout State) -> Never? {
            if state.status == .charged || state.label != nil { state.status = .shipped }
            return nil
        }
    }

    public struct Bump: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.bump" }
        public init() {}
        public func apply(toState state: inout State) -> Never? {
            state.counter += 1
            return nil
        }
    }

    public struct Expire: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.expire" }
        public func apply(toState state: inout State) -> Never? {
            if state.status == .open { state.status = .expired }
            return nil
        }
    }

    public struct Charged: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.charged" }
        public var receipt: String
        public init(receipt: String) { self.receipt = receipt }
        public func apply(toState state: inout State) -> Never? {
            guard state.status == .paid else { return nil }
            state.receipt = receipt
            state.status = .charged
            return nil
        }
    }

    public struct LabelReady: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.labelReady" }
        public var label: String
        public init(label: String) { self.label = label }
        public func apply(toState state: inout State) -> Never? {
            state.label = label
            return nil
        }
    }

    /// A new action (C5): no earlier build logged it.
    public struct Expedite: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.expedite" }
        public func apply(toState state: inout State) -> Never? { nil }
    }

    public struct Audit: DurableAction {
        public typealias WorkflowType = UpgradeOrder
        public static var tag: String { "order.audit" }
        public func apply(toState state: inout State) -> Never? {
            state.counter += 1
            return nil
        }
    }

    /// The packing child: prints the label through a task.
    public struct Packing: Workflow, Sendable {
        public static var workflowName: String { "Upgrade.Packing" }
        public typealias Output = String
        let orderID: String

        public struct Printed: WorkflowAction {
            public typealias WorkflowType = Packing
            let result: Result<String, TaskFailure>
            public func apply(toState state: inout Int) -> String? {
                state += 1
                return try? result.get()
            }
        }

        public func makeInitialState() -> Int { 0 }

        public func render(state: Int, context: RenderContext<Packing>) {
            let id = orderID
            context.runTask(key: "label", operation: { _ in
                try await UpgradeOutside.answer()
                return "label-\(id)"
            }, onResult: { Printed(result: $0) })
        }
    }

    public func makeInitialState() -> State { State() }

    public func render(state: State, context: RenderContext<UpgradeOrder>) -> Rendering {
        if state.status == .open, let deadline = state.expiresAt {
            context.runTimer(key: "expiry", fireAt: deadline) { Expire() }
        }
        if state.status == .paid, Build.declaresCharge(context) {
            let id = self.id
            context.run(AsyncOperationWorker(identity: "charge") {
                try? await UpgradeOutside.answer()
                return Charged(receipt: "rcpt-\(id)")
            }, key: "charge")
        }
        if state.status == .paid, Build.audits {
            context.run(AsyncOperationWorker(identity: "audit") {
                try? await UpgradeOutside.answer()
                return Audit()
            }, key: "audit")
        }
        if state.status == .charged, state.label == nil {
            _ = context.render(Packing(orderID: id), key: Build.childKey) { label in LabelReady(label: label) }
        }
        return Rendering(
            state: state, addItem: context.makeSink(of: AddItem.self), pay: context.makeSink(of: Pay.self),
            ship: context.makeSink(of: Ship.self), bump: context.makeSink(of: Bump.self), charged: context.makeSink(of: Charged.self),
            labelReady: context.makeSink(of: LabelReady.self))
    }

    /// The build's configuration: every action it knows, snapshots every 20 entries.
    public static func configuration(mode: DurableConfiguration.Mode = .grouped, clock: (any WorkflowClock)? = nil) -> DurableConfiguration {
        var actions = ActionRegistry(AddItem.self, Pay.self, Bump.self, Expire.self, Charged.self, LabelReady.self, Audit.self)
        if Build.knowsShip { actions.register(Ship.self) }
        if Build.name == "new-action" { actions.register(Expedite.self) }
        if Build.addItemForm == .quantityVersioned {
            actions.register(AddItem.self, version: 1) { bytes, codec in
                let first = try codec.decode(AddItem.First.self, from: bytes)
                return AddItem(name: first.name, price: first.price)
            }
        }
        var written: [String: Int] = [:]
        if Build.addItemForm == .quantityWritingFirst {
            actions.register(AddItem.self, version: 1, decode: { bytes, codec in
                let first = try codec.decode(AddItem.First.self, from: bytes)
                return AddItem(name: first.name, price: first.price)
            }, encode: { action, codec in try codec.encode(AddItem.First(name: action.name, price: action.price)) })
            written[AddItem.tag] = 1
        }
        actions.registerTask(String.self)
        var configuration = DurableConfiguration(mode: mode, actions: actions, snapshotEvery: 20)
        if let clock { configuration.host.clock = clock }
        configuration.writtenActionVersions = written
        configuration.versionMarkers = Build.versionMarkers
        configuration.checksRecordedDigests = Build.checksDigests
        configuration.codeVersion = Build.name
        return configuration
    }
}

// MARK: The builds

/// The first build.
public enum BuildV1: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "v1" }
}

/// C1: a new optional state field.
public enum BuildOptionalField: UpgradeBuild {
    public typealias State = StateOptionalField
    public static var name: String { "optional-field" }
}

/// C2: a new non-optional state field with a default, not declared.
public enum BuildDefaultedField: UpgradeBuild {
    public typealias State = StateDefaultedField
    public static var name: String { "defaulted-field" }
}

/// C2 with digest checks off (what the error used to suggest).
public enum BuildDefaultedFieldUnchecked: UpgradeBuild {
    public typealias State = StateDefaultedField
    public static var name: String { "defaulted-field-unchecked" }
    public static var checksDigests: Bool { false }
}

/// C2 declared as a revision of the state's form.
public enum BuildDeclaredField: UpgradeBuild {
    public typealias State = StateDeclaredField
    public static var name: String { "declared-field" }
}

/// C3: a field renamed, its key with it.
public enum BuildRenamedField: UpgradeBuild {
    public typealias State = StateRenamedField
    public static var name: String { "renamed-field" }
}

/// C3 keeping the encoded key.
public enum BuildRenamedKeepingKey: UpgradeBuild {
    public typealias State = StateRenamedKeepingKey
    public static var name: String { "renamed-keeping-key" }
}

/// C4: `pay` adds a fee of 250.
public enum BuildFee: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "fee" }
    public static func fee(_ context: ApplyContext<UpgradeOrder<BuildFee>>) -> Int { 250 }
}

/// C4 behind the version marker "fee".
public enum BuildFeeMarker: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "fee-marker" }
    public static func fee(_ context: ApplyContext<UpgradeOrder<BuildFeeMarker>>) -> Int { context.version("fee") >= 2 ? 250 : 0 }
    public static var versionMarkers: [String: ClosedRange<Int>] { ["fee": 1...2] }
}

/// C5: a new action type, registered.
public enum BuildNewAction: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "new-action" }
}

/// C6: `order.ship` removed.
public enum BuildWithoutShip: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "without-ship" }
    public static var knowsShip: Bool { false }
}

/// C7: a new worker while paid.
public enum BuildAudits: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "audits" }
    public static var audits: Bool { true }
}

/// C8: the charge worker removed from `render`.
public enum BuildWithoutCharge: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "without-charge" }
    public static func declaresCharge(_ context: RenderContext<UpgradeOrder<BuildWithoutCharge>>) -> Bool { false }
}

/// C8 behind the version marker "charge-worker": instances that had the worker keep it.
public enum BuildChargeMarker: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "charge-marker" }
    public static func declaresCharge(_ context: RenderContext<UpgradeOrder<BuildChargeMarker>>) -> Bool {
        context.version("charge-worker") == 1
    }
    public static var versionMarkers: [String: ClosedRange<Int>] { ["charge-worker": 1...2] }
}

/// C9: the packing child's key renamed.
public enum BuildChildKey: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "child-key" }
    public static var childKey: String { "pack" }
}

/// C9 with digest checks off.
public enum BuildChildKeyUnchecked: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "child-key-unchecked" }
    public static var childKey: String { "pack" }
    public static var checksDigests: Bool { false }
}

/// C10a: a payload field added without a version bump.
public enum BuildQuantityUnversioned: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "quantity-unversioned" }
    public static var addItemForm: AddItemForm { .quantityUnversioned }
}

/// C10b: the same with version 2 and a decoder for version 1.
public enum BuildQuantityVersioned: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "quantity-versioned" }
    public static var addItemForm: AddItemForm { .quantityVersioned }
}

// MARK: The instances

/// The stages an order can be in when a deploy comes (the first build seeds one of each).
public enum UpgradeStage: String, CaseIterable, Sendable {
    /// Open, waiting on a timer an hour away.
    case open = "s0"
    /// Open, with a timer that falls due during the downtime.
    case openDue = "s1"
    /// Open, with a snapshot (a long log).
    case openLong = "s2"
    /// Paid, the charge worker in flight.
    case paid = "s3"
    /// Paid, the worker in flight, a long log, `pay` after the last snapshot.
    case paidLong = "s4"
    /// Charged, the packing child's label task in flight.
    case charged = "s5"
    /// Shipped, a long log: pay, charge, label and ship before the last snapshot.
    case shippedLong = "s6"
    /// Shipped, a short log.
    case shipped = "s7"
    /// Expired: its timer fired.
    case expired = "s8"
    /// Paid, the worker in flight, `pay` before the snapshot.
    case paidBeforeSnapshot = "s9"

    public var id: String { "order-\(rawValue)" }
}

extension UpgradeOrder {
    /// Starts one instance per stage (the first build's): each host is returned once its
    /// instance stands where its stage says, its actions committed.
    /// `suffix` follows each id (for stores of many copies of the stages).
    public static func seed(_ store: WorkflowStore, mode: DurableConfiguration.Mode = .grouped, suffix: String = "") async throws
        -> [WorkflowHost<UpgradeOrder>]
    {
        let configuration = configuration(mode: mode)
        var hosts: [WorkflowHost<UpgradeOrder>] = []
        for stage in UpgradeStage.allCases {
            let expiry = stage == .openDue ? 2 : stage == .expired ? 0 : 3600
            let id = stage.id + suffix
            let host = try store.start(UpgradeOrder(id: id, expirySeconds: expiry), id: id, configuration: configuration)
            func send<A>(_ sink: (Rendering) -> Sink<A>, _ action: A) async {
                _ = await sink(host.rendering).sendAndWait(action)
            }
            func bumps(_ count: Int) async { for _ in 0..<count { await send(\.bump, Bump()) } }
            await send(\.addItem, AddItem(name: "sku-0", price: 100))
            switch stage {
            case .open, .openDue: break
            case .openLong: await bumps(27)
            case .paid:
                await send(\.addItem, AddItem(name: "sku-1", price: 161))
                await send(\.pay, Pay())
            case .paidLong:
                await bumps(45)
                await send(\.pay, Pay())
            case .charged:
                await send(\.pay, Pay())
                await send(\.charged, Charged(receipt: "rcpt-\(id)"))
            case .shippedLong, .shipped:
                await send(\.pay, Pay())
                await send(\.charged, Charged(receipt: "rcpt-\(id)"))
                await send(\.labelReady, LabelReady(label: "label-\(id)"))
                await send(\.ship, Ship())
                if stage == .shippedLong { await bumps(50) }
            case .expired:
                while host.rendering.state.status != .expired { try await Task.sleep(for: .milliseconds(5)) }
            case .paidBeforeSnapshot:
                await send(\.pay, Pay())
                await bumps(30)
            }
            await host.flush()
            hosts.append(host)
        }
        return hosts
    }
}

/// C10b's first step: version 2 read, version 1 still written, so the first build can come back.
public enum BuildQuantityWritingFirst: UpgradeBuild {
    public typealias State = StateV1
    public static var name: String { "quantity-writing-first" }
    public static var addItemForm: AddItemForm { .quantityWritingFirst }
}

/// Every build of the upgrade suite, by name.
public let upgradeBuilds: [any UpgradeBuild.Type] = [
    BuildV1.self, BuildOptionalField.self, BuildDefaultedField.self, BuildDefaultedFieldUnchecked.self, BuildDeclaredField.self,
    BuildRenamedField.self, BuildRenamedKeepingKey.self, BuildFee.self, BuildFeeMarker.self, BuildNewAction.self, BuildWithoutShip.self,
    BuildAudits.self, BuildWithoutCharge.self, BuildChargeMarker.self, BuildChildKey.self, BuildChildKeyUnchecked.self,
    BuildQuantityUnversioned.self, BuildQuantityVersioned.self, BuildQuantityWritingFirst.self,
]

/// An order's state in every build's terms, as JSON with sorted keys: what the suite compares.
public struct NormalizedOrder: Codable, Equatable, Sendable {
    public var items: [String]
    public var total: Int
    public var status: OrderStatus
    public var counter: Int
    public var expiresAt: Int64?
    public var receipt: String?
    public var label: String?

    public init(_ state: some UpgradeOrderState) {
        items = state.items
        total = state.total
        status = state.status
        counter = state.counter
        expiresAt = state.expiresAt?.nanosecondsSinceEpoch
        receipt = state.receipt
        label = state.label
    }

    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}
