import DurableWorkflow
import LMDB
import Workflow

/// The named databases of the signal subsystem (in the workflow store's environment).
struct SignalLayout: Sendable {
    /// Signal id (16 bytes) → ``SignalRecord``.
    let records: Database<[UInt8], [UInt8]>
    /// Signal id + big-endian version → ``StoredVersion``.
    let versions: Database<[UInt8], [UInt8]>
    /// Consumer id (16 bytes) → ``StoredConsumer``.
    let consumers: Database<[UInt8], [UInt8]>
    /// Signal id + consumer id → empty: the consumers of each signal.
    let bySignal: Database<[UInt8], [UInt8]>
    /// Idempotency key → signal id + version of the post that used it.
    let idempotency: Database<String, [UInt8]>

    init(environment: Environment) throws(LMDBError) {
        records = try environment.database(named: "signal.records")
        versions = try environment.database(named: "signal.versions")
        consumers = try environment.database(named: "signal.consumers")
        bySignal = try environment.database(named: "signal.bySignal")
        idempotency = try environment.database(named: "signal.idempotency")
    }

    static func versionKey(_ signal: SignalID, _ version: UInt64) -> [UInt8] {
        signal.bytes + withUnsafeBytes(of: version.bigEndian) { Array($0) }
    }
}

/// A signal's record: its latest version and when it was created and last posted (rule S1).
struct SignalRecord {
    var latestVersion: UInt64
    var created: WallTime
    var updated: WallTime

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [1]
        for value in [Int64(bitPattern: latestVersion), created.nanosecondsSinceEpoch, updated.nanosecondsSinceEpoch] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> SignalRecord? {
        guard bytes.count == 25, bytes[0] == 1 else { return nil }
        func int(_ at: Int) -> Int64 { Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: Int64.self)) }
        return SignalRecord(latestVersion: UInt64(bitPattern: int(1)), created: WallTime(nanosecondsSinceEpoch: int(9)),
                            updated: WallTime(nanosecondsSinceEpoch: int(17)))
    }
}

/// One posted version: payload, whether it terminates consumers, when it was posted.
struct StoredVersion {
    var terminates: Bool
    var posted: WallTime
    var payload: [UInt8]

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [1, terminates ? 1 : 0]
        withUnsafeBytes(of: posted.nanosecondsSinceEpoch.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes + payload
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> StoredVersion? {
        guard bytes.count >= 10, bytes[0] == 1 else { return nil }
        return StoredVersion(terminates: bytes[1] == 1,
                             posted: WallTime(nanosecondsSinceEpoch: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 2, as: Int64.self))),
                             payload: Array(bytes[10...]))
    }
}

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

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [2]
        bytes += signal.bytes
        bytes.append(UInt8(DeliveryBehaviour.allCases.firstIndex(of: behaviour)!))
        bytes.append(UInt8(Coalescing.allCases.firstIndex(of: coalescing)!))
        bytes.append(UInt8(ConsumerScope.allCases.firstIndex(of: scope)!))
        withUnsafeBytes(of: lastDelivered.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: created.nanosecondsSinceEpoch.littleEndian) { bytes.append(contentsOf: $0) }
        for text in [owner, runID, processIdentity] {
            let utf8 = Array(text.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes += utf8
        }
        withUnsafeBytes(of: processID.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: processStartTime.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The run that registered it.
    var run: RecordedRun { RecordedRun(runID: runID, process: ProcessIdentity(pid: processID, startTime: processStartTime)) }

    static func decode(id: ConsumerID, _ bytes: UnsafeRawBufferPointer) -> ConsumerInfo? {
        guard bytes.count >= 36, bytes[0] == 1 || bytes[0] == 2 else { return nil }
        let signal = SignalID(bytes: UnsafeRawBufferPointer(rebasing: bytes[1..<17]))
        let behaviourIndex = Int(bytes[17]), coalescingIndex = Int(bytes[18]), scopeIndex = Int(bytes[19])
        guard behaviourIndex < DeliveryBehaviour.allCases.count, coalescingIndex < Coalescing.allCases.count,
              scopeIndex < ConsumerScope.allCases.count else { return nil }
        let last = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        let created = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 28, as: Int64.self))
        var offset = 36
        var texts: [String] = []
        for _ in 0..<3 {
            guard bytes.count >= offset + 4 else { return nil }
            let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += 4
            guard bytes.count >= offset + count else { return nil }
            texts.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]), as: UTF8.self))
            offset += count
        }
        var pid: Int32 = 0, start: UInt64 = 0
        if bytes[0] == 2 {
            guard bytes.count >= offset + 12 else { return nil }
            pid = Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            start = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt64.self))
        }
        return ConsumerInfo(
            id: id, signal: signal, owner: texts[0], runID: texts[1], processIdentity: texts[2],
            processID: pid, processStartTime: start,
            behaviour: DeliveryBehaviour.allCases[behaviourIndex], coalescing: Coalescing.allCases[coalescingIndex],
            scope: ConsumerScope.allCases[scopeIndex], lastDelivered: last, created: WallTime(nanosecondsSinceEpoch: created))
    }
}

/// A signal as listed for inspection.
public struct SignalInfo: Sendable, Hashable, Codable {
    /// Its id.
    public let id: SignalID
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
}

/// A consumer with versions waiting for it.
public struct PendingDelivery: Sendable, Hashable, Codable {
    /// The consumer.
    public let consumer: ConsumerInfo
    /// The versions it will be given next, in order.
    public let versions: [UInt64]
}
