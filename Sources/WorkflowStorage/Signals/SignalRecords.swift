import Foundation

/// How many times a consumer wants a signal (rule S4).
public enum DeliveryBehaviour: String, Sendable, Codable, CaseIterable {
    /// One delivery, then the consumer is removed.
    case once
    /// Every version until one terminates consumers, then the consumer is removed.
    case untilTerminated
}

/// Which versions a consumer that fell behind receives.
public enum Coalescing: String, Sendable, Codable, CaseIterable {
    /// Every retained version after its last delivered one, in order (the default).
    case everyVersion
    /// Only the newest version.
    case latestOnly
}

/// How long a consumer lives.
public enum ConsumerScope: String, Sendable, Codable, CaseIterable {
    /// Removed when its run stops, and at start-up by a new run of the same process identity
    /// (the old run crashed) (rule S5).
    case run
    /// Survives restarts (durable workflows waiting on signals).
    case durable
}

/// A registered consumer as a backend stores it. Times are nanoseconds since 1970.
public struct ConsumerRecord: Sendable, Hashable {
    public var id: UUID
    public var signal: UUID
    /// Who it belongs to (an account, a bookmark, a workflow instance).
    public var owner: String
    /// The run that registered it, and that run's process.
    public var runID: String
    public var processIdentity: String
    public var processID: Int32
    public var processStartTime: UInt64
    public var behaviour: DeliveryBehaviour
    public var coalescing: Coalescing
    public var scope: ConsumerScope
    /// The last version delivered to it (0: none).
    public var lastDelivered: UInt64
    public var created: Int64

    public init(
        id: UUID, signal: UUID, owner: String, runID: String, processIdentity: String, processID: Int32, processStartTime: UInt64,
        behaviour: DeliveryBehaviour, coalescing: Coalescing, scope: ConsumerScope, lastDelivered: UInt64, created: Int64
    ) {
        self.id = id
        self.signal = signal
        self.owner = owner
        self.runID = runID
        self.processIdentity = processIdentity
        self.processID = processID
        self.processStartTime = processStartTime
        self.behaviour = behaviour
        self.coalescing = coalescing
        self.scope = scope
        self.lastDelivered = lastDelivered
        self.created = created
    }
}

/// One posted version of a signal.
public struct SignalVersionRecord: Sendable, Hashable {
    public var signal: UUID
    public var version: UInt64
    public var payload: [UInt8]
    /// Whether consumers are removed after receiving it.
    public var terminates: Bool
    /// When it was posted (nanoseconds since 1970).
    public var posted: Int64
    /// The poster's trace context as its tracer injected it (empty when the poster traced nothing).
    public var traceContext: TraceContext

    public init(signal: UUID, version: UInt64, payload: [UInt8], terminates: Bool, posted: Int64, traceContext: TraceContext = TraceContext()) {
        self.signal = signal
        self.version = version
        self.payload = payload
        self.terminates = terminates
        self.posted = posted
        self.traceContext = traceContext
    }
}

/// A signal's record: its latest version, the versions retained, how many consumers it has.
public struct SignalSummary: Sendable, Hashable {
    public var id: UUID
    public var latestVersion: UInt64
    public var retainedVersions: [UInt64]
    public var consumers: Int
    public var created: Int64
    public var updated: Int64

    public init(id: UUID, latestVersion: UInt64, retainedVersions: [UInt64], consumers: Int, created: Int64, updated: Int64) {
        self.id = id
        self.latestVersion = latestVersion
        self.retainedVersions = retainedVersions
        self.consumers = consumers
        self.created = created
        self.updated = updated
    }
}

/// One post of a batch, as the backend appends it.
public struct SignalPostRecord: Sendable, Hashable {
    public var signal: UUID
    public var payload: [UInt8]
    public var terminates: Bool
    /// A key that makes the post idempotent: a second post with it appends nothing and returns
    /// the first one's version.
    public var idempotencyKey: String?
    /// The poster's trace context, kept with the version for the span of its delivery.
    public var traceContext: TraceContext

    public init(signal: UUID, payload: [UInt8], terminates: Bool, idempotencyKey: String?, traceContext: TraceContext = TraceContext()) {
        self.signal = signal
        self.payload = payload
        self.terminates = terminates
        self.idempotencyKey = idempotencyKey
        self.traceContext = traceContext
    }
}

/// A consumer's next version, read together.
public struct PendingVersion: Sendable, Hashable {
    public var consumer: ConsumerRecord
    public var version: SignalVersionRecord

    public init(consumer: ConsumerRecord, version: SignalVersionRecord) {
        self.consumer = consumer
        self.version = version
    }
}
