import LMDB
import WorkflowStorage

/// Control requests (rule O2) in `control`: keyed by the instance's id (its length, 2 bytes
/// big-endian, then its UTF-8) and the request's number (big-endian), so an instance's requests
/// are contiguous and in order. One writer at a time numbers them: a request's number is its
/// instance's last one plus one.
extension LMDBStorage {
    public func postControlRequests(_ requests: [NewControlRequest]) throws(StorageFailure) -> [StoredControlRequest?] {
        guard !requests.isEmpty else { return [] }
        let layout = self.layout
        return try call {
            try environment.write { txn -> [StoredControlRequest?] in
                try requests.map { request -> StoredControlRequest? in
                    guard try txn.value(forKey: request.instance, in: layout.instances, { _ in true }) == true else { return nil }
                    let existing = try Self.controlRequests(of: request.instance, in: layout, txn)
                    // Old answers go; the last request stays, so that numbers go on from it.
                    let last = existing.last?.number ?? 0
                    for old in existing where old.number != last && ControlRequestRetention.expired(old, now: request.requested) {
                        _ = try txn.delete(ControlRecord.key(instance: old.instance, number: old.number), in: layout.control)
                    }
                    let stored = StoredControlRequest(instance: request.instance, number: last + 1, request: request, answer: nil)
                    try txn.put(ControlRecord.encoded(stored), forKey: ControlRecord.key(instance: stored.instance, number: stored.number),
                                in: layout.control)
                    return stored
                }
            }
        }
    }

    public func pendingControlRequests() throws(StorageFailure) -> [StoredControlRequest] {
        let layout = self.layout
        return try call {
            try environment.read { txn -> [StoredControlRequest] in
                var pending: [StoredControlRequest] = []
                try txn.forEach(in: layout.control) { key, value in
                    guard let stored = ControlRecord.decode(key: key, value: value) else {
                        throw StorageFailure(kind: .corrupted, backend: "LMDB", location: location, operation: "read control requests",
                                             detail: "a control request's record does not decode", recovery: "Restore the store from a copy")
                    }
                    if stored.answer == nil { pending.append(stored) }
                    return true
                }
                return pending.sorted { ($0.instance, $0.number) < ($1.instance, $1.number) }
            }
        }
    }

    public func controlRequests(of id: String) throws(StorageFailure) -> [StoredControlRequest] {
        let layout = self.layout
        return try call { try environment.read { txn in try Self.controlRequests(of: id, in: layout, txn) } }
    }

    public func answerControlRequest(instance id: String, number: UInt64, answer: ControlAnswerRecord) throws(StorageFailure) -> Bool {
        let layout = self.layout
        return try call {
            try environment.write { txn -> Bool in
                let key = ControlRecord.key(instance: id, number: number)
                guard var stored = try txn.value(forKey: key, in: layout.control, { ControlRecord.decode(key: nil, value: $0) }) ?? nil,
                      stored.answer == nil else { return false }
                stored.instance = id
                stored.number = number
                stored.answer = answer
                try txn.put(ControlRecord.encoded(stored), forKey: key, in: layout.control)
                return true
            }
        }
    }

    /// The requests of instance `id` in `control`, by number.
    private static func controlRequests<Mode>(of id: String, in layout: StoreLayout, _ txn: borrowing Transaction<Mode>) throws
        -> [StoredControlRequest] {
        let prefix = ControlRecord.prefix(instance: id)
        var found: [StoredControlRequest] = []
        try txn.forEach(in: layout.control, from: ControlRecord.key(instance: id, number: 0)) { key, value in
            guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
            if let stored = ControlRecord.decode(key: key, value: value) { found.append(stored) }
            return true
        }
        return found
    }
}

/// A control request's record in `control` (format 10): a version byte (1); the verb (its index
/// in ``ControlVerb``); flags (1: a reason, 2: a deadline, 4: an answer); the reason; the
/// deadline (Int64 ns); who asked and when (Int64 ns); and, once answered, the outcome (its
/// index), a flag (1: a sequence), the sequence, the detail, who answered and when. Strings are a
/// UInt32 length and UTF-8; integers are little-endian.
enum ControlRecord {
    static func prefix(instance: String) -> [UInt8] {
        let id = Array(instance.utf8)
        return [UInt8(truncatingIfNeeded: id.count >> 8), UInt8(truncatingIfNeeded: id.count)] + id
    }

    static func key(instance: String, number: UInt64) -> [UInt8] {
        prefix(instance: instance) + withUnsafeBytes(of: number.bigEndian) { Array($0) }
    }

    static func encoded(_ stored: StoredControlRequest) -> [UInt8] {
        var bytes: [UInt8] = [1, UInt8(ControlVerb.allCases.firstIndex(of: stored.request.verb)!)]
        let request = stored.request
        bytes.append((request.reason == nil ? 0 : 1) | (request.deadline == nil ? 0 : 2) | (stored.answer == nil ? 0 : 4))
        if let reason = request.reason { RecordFields.append(reason, to: &bytes) }
        if let deadline = request.deadline { RecordFields.append(deadline, to: &bytes) }
        RecordFields.append(request.requestedBy, to: &bytes)
        RecordFields.append(request.requested, to: &bytes)
        if let answer = stored.answer {
            bytes.append(UInt8(ControlAnswerRecord.Outcome.allCases.firstIndex(of: answer.outcome)!))
            bytes.append(answer.sequence == nil ? 0 : 1)
            if let sequence = answer.sequence { RecordFields.append(sequence, to: &bytes) }
            RecordFields.append(answer.detail, to: &bytes)
            RecordFields.append(answer.answeredBy, to: &bytes)
            RecordFields.append(answer.answered, to: &bytes)
        }
        return bytes
    }

    /// The request a record holds; its instance and number from `key` (when given).
    static func decode(key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer) -> StoredControlRequest? {
        var instance = "", number: UInt64 = 0
        if let key {
            guard key.count >= 10 else { return nil }
            let length = Int(key[0]) << 8 | Int(key[1])
            guard key.count == 2 + length + 8 else { return nil }
            instance = String(decoding: UnsafeRawBufferPointer(rebasing: key[2..<(2 + length)]), as: UTF8.self)
            number = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 2 + length, as: UInt64.self))
        }
        var reader = RecordFields.Reader(bytes: value)
        guard reader.next(UInt8.self) == 1, let verbIndex = reader.next(UInt8.self).map(Int.init), verbIndex < ControlVerb.allCases.count,
              let flags = reader.next(UInt8.self) else { return nil }
        let reason = flags & 1 != 0 ? reader.nextString() : nil
        if flags & 1 != 0, reason == nil { return nil }
        let deadline = flags & 2 != 0 ? reader.next(Int64.self) : nil
        if flags & 2 != 0, deadline == nil { return nil }
        guard let requestedBy = reader.nextString(), let requested = reader.next(Int64.self) else { return nil }
        var answer: ControlAnswerRecord?
        if flags & 4 != 0 {
            guard let outcomeIndex = reader.next(UInt8.self).map(Int.init), outcomeIndex < ControlAnswerRecord.Outcome.allCases.count,
                  let hasSequence = reader.next(UInt8.self) else { return nil }
            let sequence = hasSequence == 1 ? reader.next(UInt64.self) : nil
            guard let detail = reader.nextString(), let answeredBy = reader.nextString(), let answered = reader.next(Int64.self) else {
                return nil
            }
            answer = ControlAnswerRecord(outcome: ControlAnswerRecord.Outcome.allCases[outcomeIndex], sequence: sequence, detail: detail,
                                         answeredBy: answeredBy, answered: answered)
        }
        guard reader.offset == value.count else { return nil }
        let request = NewControlRequest(instance: instance, verb: ControlVerb.allCases[verbIndex], reason: reason, deadline: deadline,
                                        requestedBy: requestedBy, requested: requested)
        return StoredControlRequest(instance: instance, number: number, request: request, answer: answer)
    }
}
