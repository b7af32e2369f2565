import Foundation

/// The signals of an in-memory store as plain values, with the rules of ``SignalStorage``
/// applied to them (the LMDB backend applies the same rules to its databases).
struct SignalContents {
    struct Record {
        var latestVersion: UInt64
        var created: Int64
        var updated: Int64
    }

    var records: [UUID: Record] = [:]
    /// By signal: retained versions, oldest first.
    var versions: [UUID: [SignalVersionRecord]] = [:]
    var consumers: [UUID: ConsumerRecord] = [:]
    /// Idempotency key → the signal and version its post made.
    var idempotency: [String: (signal: UUID, version: UInt64)] = [:]
    /// Application tables by handle, and their names.
    var tables: [UInt64: [[UInt8]: [UInt8]]] = [:]
    var tableNames: [String: UInt64] = [:]
    /// The stable names signals were made from.
    var names: [UUID: String] = [:]

    mutating func post(_ post: SignalPostRecord, keepLatest: Int, at time: Int64) -> UInt64 {
        if let key = post.idempotencyKey, let earlier = idempotency[key] { return earlier.version }
        var record = records[post.signal] ?? Record(latestVersion: 0, created: time, updated: time)
        record.latestVersion += 1
        record.updated = time
        records[post.signal] = record
        versions[post.signal, default: []].append(SignalVersionRecord(
            signal: post.signal, version: record.latestVersion, payload: post.payload, terminates: post.terminates, posted: time,
            traceContext: post.traceContext))
        if let key = post.idempotencyKey { idempotency[key] = (post.signal, record.latestVersion) }
        prune(post.signal, keepLatest: keepLatest)
        return record.latestVersion
    }

    mutating func register(_ consumer: ConsumerRecord, at time: Int64) -> Bool {
        guard consumers[consumer.id] == nil else { return false }
        consumers[consumer.id] = consumer
        if records[consumer.signal] == nil { records[consumer.signal] = Record(latestVersion: 0, created: time, updated: time) }
        return true
    }

    func consumers(of signal: UUID) -> [ConsumerRecord] {
        consumers.values.filter { $0.signal == signal }
    }

    /// Removes the consumer; its signal's record and versions too when it was the last.
    mutating func remove(_ id: UUID) -> Bool {
        guard let consumer = consumers.removeValue(forKey: id) else { return false }
        if consumers(of: consumer.signal).isEmpty {
            records[consumer.signal] = nil
            versions[consumer.signal] = nil
            names[consumer.signal] = nil
        }
        return true
    }

    /// Moves the consumer's position forward to the mark's version and applies the removal
    /// rules; nothing when it is gone or already there.
    /// Whether `mark`'s consumer exists and already has its version (a mark for a consumer that
    /// is gone is not one: its wait may have ended meanwhile).
    func isDelivered(_ mark: DeliveryMarkRecord) -> Bool {
        consumers[mark.consumer].map { $0.lastDelivered >= mark.version } ?? false
    }

    mutating func apply(_ mark: DeliveryMarkRecord) {
        guard var consumer = consumers[mark.consumer], consumer.lastDelivered < mark.version else { return }
        consumer.lastDelivered = mark.version
        if consumer.behaviour == .once || mark.terminates {
            _ = remove(consumer.id)
        } else {
            consumers[consumer.id] = consumer
            prune(consumer.signal, keepLatest: mark.keepLatest)
        }
    }

    /// Drops versions every consumer has, keeping the newest `keepLatest`.
    mutating func prune(_ signal: UUID, keepLatest: Int) {
        guard let latest = records[signal]?.latestVersion else { return }
        let keepFrom = latest >= UInt64(keepLatest) ? latest - UInt64(keepLatest) : 0
        let needed = consumers(of: signal).map(\.lastDelivered).min()
        let through = needed.map { min($0, keepFrom) } ?? keepFrom
        if through > 0 { versions[signal]?.removeAll { $0.version <= through } }
    }

    func next(for id: UUID) -> PendingVersion? {
        guard let consumer = consumers[id], let record = records[consumer.signal], record.latestVersion > consumer.lastDelivered else {
            return nil
        }
        let start = consumer.coalescing == .latestOnly ? record.latestVersion : consumer.lastDelivered + 1
        guard let version = versions[consumer.signal]?.first(where: { $0.version >= start }) else { return nil }
        return PendingVersion(consumer: consumer, version: version)
    }

    func summaries() -> [SignalSummary] {
        records.map { id, record in
            SignalSummary(id: id, latestVersion: record.latestVersion, retainedVersions: (versions[id] ?? []).map(\.version),
                          consumers: consumers(of: id).count, created: record.created, updated: record.updated)
        }
        .sorted { $0.id.uuidString < $1.id.uuidString }
    }
}
