import WorkflowStorage

/// How an instance's index record is laid out in an LMDB store: the static part (key, type,
/// created, codec) under the id in `instances`, written once; the mutable part (status, updated,
/// last sequence, last snapshot, claim, and where its entries in the journal start) under the
/// instance's key in `state`, rewritten by every commit, except those that only add entries to an
/// instance with entries in the journal already (its last journal entry then has its last
/// sequence and update time). (Format 1 kept the mutable part in `log`, after the instance's
/// entries, at sequence `UInt64.max`.)
enum IndexRecord {
    /// The sequence at which format 1 kept the mutable part in `log`.
    static let formatOneStateSequence = UInt64.max

    /// The static part: version 4 when the instance has failed with a reason (after the codec,
    /// a byte of flags, 1: a code version follows, 2: a failure follows), version 3 when it has
    /// a code version (after the codec), else version 2. Written at creation, and again when a
    /// failure is set or cleared.
    static func encodedStatic(_ instance: StoredInstance) -> [UInt8] {
        var bytes: [UInt8] = [instance.failure != nil ? 4 : instance.codeVersion == nil ? 2 : 3]
        RecordFields.append(instance.key, to: &bytes)
        RecordFields.append(instance.created, to: &bytes)
        RecordFields.append(instance.workflowType, to: &bytes)
        RecordFields.append(instance.codec, to: &bytes)
        if let failure = instance.failure {
            bytes.append((instance.codeVersion == nil ? 0 : 1) | 2)
            if let codeVersion = instance.codeVersion { RecordFields.append(codeVersion, to: &bytes) }
            RecordFields.append(failure, to: &bytes)
        } else if let codeVersion = instance.codeVersion {
            RecordFields.append(codeVersion, to: &bytes)
        }
        return bytes
    }

    /// The mutable part; `journaledFrom` is the first sequence of the instance in the journal,
    /// 0 when it has none there.
    static func encodedState(_ instance: StoredInstance, journaledFrom: UInt64) -> [UInt8] {
        encodedState(State(status: instance.status, updated: instance.updated, lastSequence: instance.lastSequence,
                           lastSnapshot: instance.lastSnapshot, claim: instance.claim, journaledFrom: journaledFrom))
    }

    /// `state`, encoded.
    static func encodedState(_ state: State) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: stateSize)
        bytes.withUnsafeMutableBytes { writeState(state, into: $0) }
        return bytes
    }

    /// Writes `state` into `space` (``stateSize`` bytes), as ``encodedState(_:)`` encodes it: for
    /// a value reserved in place in the map.
    static func writeState(_ state: State, into space: UnsafeMutableRawBufferPointer) {
        precondition(space.count == stateSize, "a state record is \(stateSize) bytes")
        space[0] = 2
        space[1] = statusCode(state.status)
        var offset = 2
        func store(_ value: some FixedWidthInteger) {
            space.storeBytes(of: value.littleEndian, toByteOffset: offset, as: type(of: value))
            offset += MemoryLayout.size(ofValue: value)
        }
        store(state.updated)
        store(state.lastSequence)
        store(state.lastSnapshot)
        store(state.claim.pid)
        store(state.claim.processStart)
        store(state.claim.token)
        store(state.journaledFrom)
    }

    /// The size of the mutable part (format 2): version and status (a byte each); updated, last
    /// sequence and last snapshot (8 bytes each); the claim's pid (4), process start and token (8
    /// each); the first journaled sequence (8).
    static let stateSize = 2 + 3 * 8 + 4 + 2 * 8 + 8

    /// A status as the mutable part stores it (fixed here: the format does not follow the order
    /// of `InstanceStatus`'s cases).
    static func statusCode(_ status: InstanceStatus) -> UInt8 {
        switch status {
        case .running: 0
        case .completed: 1
        case .failed: 2
        case .cancelled: 3
        case .paused: 4
        case .terminated: 5
        }
    }

    /// The status a stored byte stands for; `nil` for an unknown one.
    static func status(code: UInt8) -> InstanceStatus? {
        switch code {
        case 0: .running
        case 1: .completed
        case 2: .failed
        case 3: .cancelled
        case 4: .paused
        case 5: .terminated
        default: nil
        }
    }

    /// The static part of instance `id`; the mutable fields are zero until ``withState(_:_:)``
    /// fills them. Version 1 (before codecs were recorded) was always written with JSON; version
    /// 3 adds the code version.
    static func decodeStatic(_ bytes: UnsafeRawBufferPointer, id: String) -> StoredInstance? {
        var fields = RecordFields.Reader(bytes: bytes)
        guard let version = fields.next(UInt8.self), (1...4).contains(version),
              let key = fields.next(UInt64.self), let created = fields.next(Int64.self), let type = fields.nextString(),
              let codec = version >= 2 ? fields.nextString() : "json" else { return nil }
        var codeVersion: String?, failure: String?
        if version == 3 {
            guard let read = fields.nextString() else { return nil }
            codeVersion = read
        } else if version == 4 {
            guard let flags = fields.next(UInt8.self), flags & ~3 == 0 else { return nil }
            if flags & 1 != 0 {
                guard let read = fields.nextString() else { return nil }
                codeVersion = read
            }
            if flags & 2 != 0 {
                guard let read = fields.nextString() else { return nil }
                failure = read
            }
        }
        return StoredInstance(id: id, key: key, workflowType: type, codec: codec, status: .running, created: created, updated: created,
                              lastSequence: 0, lastSnapshot: 0, claim: .none, codeVersion: codeVersion, failure: failure)
    }

    /// The mutable part of an instance's record. A commit reads and rewrites only this: it holds
    /// no strings, so reading it retains nothing.
    struct State {
        var status: InstanceStatus
        var updated: Int64
        var lastSequence: UInt64
        var lastSnapshot: UInt64
        var claim: InstanceClaim
        /// The first sequence of the instance in the journal, 0 when it has none there.
        var journaledFrom: UInt64

        /// Takes the last sequence and update time of `tail` when that entry is later.
        mutating func advance(to tail: JournalTail?) {
            guard let tail, tail.sequence > lastSequence else { return }
            lastSequence = tail.sequence
            updated = tail.updated
        }
    }

    /// The mutable part decoded from `bytes` (version 1 or 2); `nil` when the bytes are corrupt.
    static func decodeState(_ bytes: UnsafeRawBufferPointer) -> State? {
        var fields = RecordFields.Reader(bytes: bytes)
        guard let version = fields.next(UInt8.self), version == 1 || version == 2, let statusCode = fields.next(UInt8.self),
              let status = status(code: statusCode),
              let updated = fields.next(Int64.self), let lastSequence = fields.next(UInt64.self), let lastSnapshot = fields.next(UInt64.self),
              let pid = fields.next(Int32.self), let processStart = fields.next(UInt64.self), let token = fields.next(UInt64.self),
              let journaledFrom = version == 2 ? fields.next(UInt64.self) : 0 else {
            return nil
        }
        return State(status: status, updated: updated, lastSequence: lastSequence, lastSnapshot: lastSnapshot,
                     claim: InstanceClaim(pid: pid, processStart: processStart, token: token), journaledFrom: journaledFrom)
    }

    /// `instance` with the mutable part decoded from `bytes` (version 1 or 2), and the first
    /// sequence of the instance in the journal; `nil` when the bytes are corrupt.
    static func withState(_ instance: StoredInstance, _ bytes: UnsafeRawBufferPointer) -> (instance: StoredInstance, journaledFrom: UInt64)? {
        guard let state = decodeState(bytes) else { return nil }
        var copy = instance
        copy.status = state.status
        copy.updated = state.updated
        copy.lastSequence = state.lastSequence
        copy.lastSnapshot = state.lastSnapshot
        copy.claim = state.claim
        if state.status != .failed { copy.failure = nil }
        return (copy, state.journaledFrom)
    }
}
