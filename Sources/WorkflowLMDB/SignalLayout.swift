import Foundation
import LMDB
import WorkflowStorage

/// The named databases of a store's signals (in the store's environment).
struct SignalLayout: Sendable {
    /// Signal id (16 bytes) → ``SignalRecordBytes``.
    let records: Database<[UInt8], [UInt8]>
    /// Signal id + big-endian version → ``StoredVersionBytes``.
    let versions: Database<[UInt8], [UInt8]>
    /// Consumer id (16 bytes) → ``ConsumerRecord`` bytes.
    let consumers: Database<[UInt8], [UInt8]>
    /// Signal id + consumer id → empty: the consumers of each signal.
    let bySignal: Database<[UInt8], [UInt8]>
    /// Idempotency key → signal id + version of the post that used it.
    let idempotency: Database<String, [UInt8]>
    /// Signal id → the stable name it was made from (UTF-8; format 10).
    let names: Database<[UInt8], [UInt8]>

    init(environment: Environment) throws(LMDBError) {
        records = try environment.database(named: "signal.records")
        versions = try environment.database(named: "signal.versions")
        consumers = try environment.database(named: "signal.consumers")
        bySignal = try environment.database(named: "signal.bySignal")
        idempotency = try environment.database(named: "signal.idempotency")
        names = try environment.database(named: "signal.names")
    }

    static func versionKey(_ signal: UUID, _ version: UInt64) -> [UInt8] {
        signal.bytes + withUnsafeBytes(of: version.bigEndian) { Array($0) }
    }
}

extension UUID {
    var bytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }
    init(bytes: UnsafeRawBufferPointer) { self.init(uuid: bytes.loadUnaligned(as: uuid_t.self)) }
}

/// A signal's record: its latest version and when it was created and last posted (rule S1).
struct SignalRecordBytes {
    var latestVersion: UInt64
    var created: Int64
    var updated: Int64

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [1]
        for value in [Int64(bitPattern: latestVersion), created, updated] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> SignalRecordBytes? {
        guard bytes.count == 25, bytes[0] == 1 else { return nil }
        func int(_ at: Int) -> Int64 { Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: Int64.self)) }
        return SignalRecordBytes(latestVersion: UInt64(bitPattern: int(1)), created: int(9), updated: int(17))
    }
}

/// One posted version's stored bytes. Format 1: format, whether it terminates consumers, when
/// it was posted, payload. Format 2 (written only for a version with a trace context) adds the
/// context's length (`UInt32`) and ``TraceContext/encoded`` bytes before the payload.
enum StoredVersionBytes {
    static func encode(terminates: Bool, posted: Int64, traceContext: TraceContext, payload: [UInt8]) -> [UInt8] {
        let context = traceContext.encoded
        var bytes: [UInt8] = [context.isEmpty ? 1 : 2, terminates ? 1 : 0]
        withUnsafeBytes(of: posted.littleEndian) { bytes.append(contentsOf: $0) }
        if !context.isEmpty {
            bytes += (0..<4).map { UInt8(truncatingIfNeeded: UInt32(context.count) >> (8 * $0)) }  // little-endian
            bytes += context
        }
        return bytes + payload
    }

    static func decode(signal: UUID, key: UnsafeRawBufferPointer, _ bytes: UnsafeRawBufferPointer) -> SignalVersionRecord? {
        guard key.count == 24, bytes.count >= 10, bytes[0] == 1 || bytes[0] == 2 else { return nil }
        var payloadStart = 10
        var traceContext = TraceContext()
        if bytes[0] == 2 {
            guard bytes.count >= 14 else { return nil }
            let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 10, as: UInt32.self)))
            guard bytes.count - 14 >= count, let context = TraceContext(encoded: Array(bytes[14..<14 + count])) else { return nil }
            traceContext = context
            payloadStart = 14 + count
        }
        return SignalVersionRecord(
            signal: signal, version: UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            payload: Array(bytes[payloadStart...]), terminates: bytes[1] == 1,
            posted: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 2, as: Int64.self)), traceContext: traceContext)
    }
}

extension ConsumerRecord {
    /// Format 2: format, signal, behaviour, coalescing, scope, last delivered, created, owner,
    /// run id and process identity (length-prefixed), pid, process start time. Format 1 had no
    /// pid and start time.
    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [2]
        bytes += signal.bytes
        bytes.append(UInt8(DeliveryBehaviour.allCases.firstIndex(of: behaviour)!))
        bytes.append(UInt8(Coalescing.allCases.firstIndex(of: coalescing)!))
        bytes.append(UInt8(ConsumerScope.allCases.firstIndex(of: scope)!))
        withUnsafeBytes(of: lastDelivered.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: created.littleEndian) { bytes.append(contentsOf: $0) }
        for text in [owner, runID, processIdentity] {
            let utf8 = Array(text.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes += utf8
        }
        withUnsafeBytes(of: processID.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: processStartTime.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    static func decode(id: UUID, _ bytes: UnsafeRawBufferPointer) -> ConsumerRecord? {
        guard bytes.count >= 36, bytes[0] == 1 || bytes[0] == 2 else { return nil }
        let signal = UUID(bytes: UnsafeRawBufferPointer(rebasing: bytes[1..<17]))
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
        return ConsumerRecord(
            id: id, signal: signal, owner: texts[0], runID: texts[1], processIdentity: texts[2], processID: pid, processStartTime: start,
            behaviour: DeliveryBehaviour.allCases[behaviourIndex], coalescing: Coalescing.allCases[coalescingIndex],
            scope: ConsumerScope.allCases[scopeIndex], lastDelivered: last, created: created)
    }
}
