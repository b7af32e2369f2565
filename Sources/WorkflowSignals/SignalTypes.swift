import Foundation
import Workflow
import WorkflowStorage

/// A signal's name: a UUID, made once (e.g. when an action starts work whose completion it
/// will announce) and shared with whoever posts and whoever consumes.
public struct SignalID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The UUID.
    public let uuid: UUID
    /// The name the id was derived from (``init(stableName:)``), when this value was made from
    /// one: posts and waits with it keep the name in the store for operators (`wfctl signals`).
    /// Not part of the id: equality, hashing and the encoded form are the UUID's alone.
    public private(set) var stableName: String?

    /// A new, random signal id.
    public init() { uuid = UUID() }
    /// The signal named `uuid`.
    public init(_ uuid: UUID) { self.uuid = uuid }
    /// The signal named by a UUID string, or `nil`.
    public init?(_ string: String) {
        guard let uuid = UUID(uuidString: string) else { return nil }
        self.uuid = uuid
    }
    /// A stable id derived from `name` (the same name always names the same signal), for
    /// signals two programs agree on without exchanging an id.
    public init(stableName name: String) {
        uuid = ConsumerID(stableName: "signal:" + name).uuid
        stableName = name
    }
    public var description: String { uuid.uuidString }

    private enum CodingKeys: String, CodingKey { case uuid }

    public static func == (lhs: SignalID, rhs: SignalID) -> Bool { lhs.uuid == rhs.uuid }

    public func hash(into hasher: inout Hasher) { hasher.combine(uuid) }
}

/// A consumer's id.
public struct ConsumerID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The UUID.
    public let uuid: UUID
    /// A new, random consumer id.
    public init() { uuid = UUID() }
    /// The consumer named `uuid`.
    public init(_ uuid: UUID) { self.uuid = uuid }
    /// A stable id derived from `name` (the same name always gives the same id).
    public init(stableName name: String) {
        var first = FNV64(seed: 0xcbf2_9ce4_8422_2325), second = FNV64(seed: 0x8422_2325_cbf2_9ce4)
        first.combine(name)
        second.combine(name)
        var bytes = (first.value, second.value)
        uuid = withUnsafeBytes(of: &bytes) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
    public var description: String { uuid.uuidString }
}

/// How many times a consumer wants a signal (rule S4): `.once` or `.untilTerminated`.
public typealias DeliveryBehaviour = WorkflowStorage.DeliveryBehaviour
/// Which versions a consumer that fell behind receives: `.everyVersion` or `.latestOnly`.
public typealias Coalescing = WorkflowStorage.Coalescing
/// How long a consumer lives: `.run` or `.durable`.
public typealias ConsumerScope = WorkflowStorage.ConsumerScope

/// The trace context a signal version carries from its post to its deliveries.
public typealias TraceContext = WorkflowStorage.TraceContext

/// One version of a signal, as delivered or inspected.
public struct SignalDelivery: Sendable, Hashable {
    /// The signal.
    public let signal: SignalID
    /// The consumer it is delivered to (`nil` when inspecting).
    public let consumer: ConsumerID?
    /// The version (1, 2, ...).
    public let version: UInt64
    /// The payload bytes.
    public let payload: [UInt8]
    /// Whether consumers are removed after receiving it.
    public let terminatesConsumersAfterDelivery: Bool
    /// When it was posted.
    public let posted: WallTime
    /// The poster's trace context (empty when the poster had no tracer and was given none): the
    /// delivery's span continues its trace, and a handler may extract it with its own tracer.
    public let traceContext: TraceContext

    /// A delivery of `payload` as version `version` of `signal` (a render test's: nothing posted it).
    package init(signal: SignalID, version: UInt64, payload: [UInt8], posted: WallTime) {
        self.signal = signal
        consumer = nil
        self.version = version
        self.payload = payload
        terminatesConsumersAfterDelivery = false
        self.posted = posted
        traceContext = TraceContext()
    }

    init(_ record: SignalVersionRecord, consumer: ConsumerID?) {
        signal = SignalID(record.signal)
        self.consumer = consumer
        version = record.version
        payload = record.payload
        terminatesConsumersAfterDelivery = record.terminates
        posted = WallTime(nanosecondsSinceEpoch: record.posted)
        traceContext = record.traceContext
    }

    /// The payload decoded from JSON as `T`, or ``SignalError/Kind/undecodablePayload``.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws(SignalError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(payload))
        } catch {
            throw SignalError(.undecodablePayload, store: "", signal: signal, consumer: consumer, version: version,
                              detail: "the payload (\(payload.count) bytes) does not decode as \(T.self): \(error)",
                              recovery: "Post and consume the signal with the same payload type")
        }
    }
}

/// FNV-1a with a chosen seed (stable consumer ids).
struct FNV64 {
    var value: UInt64
    init(seed: UInt64) { value = seed }
    mutating func combine(_ text: String) {
        for byte in text.utf8 {
            value ^= UInt64(byte)
            value &*= 0x0000_0100_0000_01B3
        }
    }
}
