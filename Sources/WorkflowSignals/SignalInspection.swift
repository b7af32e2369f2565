import DurableWorkflow
import Foundation
import Workflow
import WorkflowStorage

/// A registered consumer (rule S2).
public struct ConsumerInfo: Sendable, Hashable, Codable {
    /// Its id.
    public let id: ConsumerID
    /// The signal it consumes.
    public let signal: SignalID
    /// Who it belongs to (an account, a bookmark, a workflow instance).
    public let owner: String
    /// The run that registered it.
    public let runID: String
    /// The process identity that registered it.
    public let processIdentity: String
    /// The pid of the process that registered it (0 for a consumer registered before pids were
    /// recorded).
    public let processID: Int32
    /// That process's start time (clock ticks since boot), so a reused pid is not taken for it.
    public let processStartTime: UInt64
    /// Once or until terminated.
    public let behaviour: DeliveryBehaviour
    /// Every version or the latest only.
    public let coalescing: Coalescing
    /// Run-scoped or durable.
    public let scope: ConsumerScope
    /// The last version delivered to it (0: none).
    public internal(set) var lastDelivered: UInt64
    /// When it was registered.
    public let created: WallTime

    init(_ record: ConsumerRecord) {
        id = ConsumerID(record.id)
        signal = SignalID(record.signal)
        owner = record.owner
        runID = record.runID
        processIdentity = record.processIdentity
        processID = record.processID
        processStartTime = record.processStartTime
        behaviour = record.behaviour
        coalescing = record.coalescing
        scope = record.scope
        lastDelivered = record.lastDelivered
        created = WallTime(nanosecondsSinceEpoch: record.created)
    }

    /// The run that registered it.
    var run: RecordedRun { RecordedRun(runID: runID, process: ProcessIdentity(pid: processID, startTime: processStartTime)) }
}

/// A signal as listed for inspection.
public struct SignalInfo: Sendable, Hashable, Codable {
    /// Its id.
    public let id: SignalID
    /// The stable name it was made from, when a post or a wait gave it (``SignalID/init(stableName:)``).
    public let name: String?
    /// Its latest version.
    public let latestVersion: UInt64
    /// The versions still retained.
    public let retainedVersions: [UInt64]
    /// How many consumers it has.
    public let consumers: Int
    /// When it was first posted or consumed.
    public let created: WallTime
    /// When it was last posted.
    public let updated: WallTime

    init(_ summary: SignalSummary, name: String?) {
        id = SignalID(summary.id)
        self.name = name
        latestVersion = summary.latestVersion
        retainedVersions = summary.retainedVersions
        consumers = summary.consumers
        created = WallTime(nanosecondsSinceEpoch: summary.created)
        updated = WallTime(nanosecondsSinceEpoch: summary.updated)
    }
}

/// A consumer with versions waiting for it.
public struct PendingDelivery: Sendable, Hashable, Codable {
    /// The consumer.
    public let consumer: ConsumerInfo
    /// The versions it will be given next, in order.
    public let versions: [UInt64]
}

extension SignalCenter {
    // MARK: Inspection

    /// Every signal record with its retained versions and consumer count.
    public func signals() throws -> [SignalInfo] {
        let (summaries, names) = try storage { () throws(StorageFailure) in (try signalStorage.signals(), try signalStorage.signalNames()) }
        return summaries.map { SignalInfo($0, name: names[$0.id]) }
    }

    /// The retained versions of `signal`, oldest first.
    public func versions(of signal: SignalID) throws -> [SignalDelivery] {
        guard let versions = try storage({ () throws(StorageFailure) in try signalStorage.versions(of: signal.uuid) }) else {
            throw SignalError(.unknownSignal, store: path, signal: signal, detail: "no signal record has this id",
                              recovery: "List signals with `wfctl signals \(path)`")
        }
        return versions.map { SignalDelivery($0, consumer: nil) }
    }

    /// Every consumer (of `signal`, if given) with its position.
    public func consumers(of signal: SignalID? = nil) throws -> [ConsumerInfo] {
        try storage { () throws(StorageFailure) in try signalStorage.consumers() }
            .filter { signal == nil || $0.signal == signal?.uuid }.map(ConsumerInfo.init)
    }

    /// Every consumer with versions it has not been given yet, and those versions.
    public func pendingDeliveries() throws -> [PendingDelivery] {
        let retained = try storage { () throws(StorageFailure) in
            Dictionary(uniqueKeysWithValues: try signalStorage.signals().map { ($0.id, $0.retainedVersions) })
        }
        return try consumers().compactMap { consumer in
            let waiting = (retained[consumer.signal.uuid] ?? []).filter { $0 > consumer.lastDelivered }
            let versions = consumer.coalescing == .latestOnly ? Array(waiting.suffix(1)) : waiting
            return versions.isEmpty ? nil : PendingDelivery(consumer: consumer, versions: versions)
        }
    }
}
