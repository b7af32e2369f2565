import Dispatch
import LMDB
import Synchronization
import Workflow
import WorkflowLocks

/// Writes one instance's commits, one at a time and in sequence order: on the host's thread
/// (strict and processCrashSafe commits, and whenever the host must wait), or in the background
/// for batches the host hands off (group commits), so that the host goes on applying actions
/// while a batch is encoded, written and synced.
///
/// `writing` is held for every commit and guards the index record as last committed. The
/// batches handed off wait, merged into one, under `handedOff`, with whether a background worker
/// is running. A worker takes the waiting batch only while it holds `writing`, so a commit on
/// the host's thread, which first takes whatever waits, can never be overtaken by an older batch.
/// A failed commit is final: later batches are abandoned (they would leave a gap in the log).
final class LogWriter: Sendable {
    private let store: WorkflowStore
    private let instanceID: String
    private let owner: InstanceOwner
    private let configuration: DurableConfiguration
    private let writing: Lock<InstanceRecord>
    private let handedOff = Lock(HandOffs())
    /// Signalled when the worker takes the waiting batch while the host waits for room.
    private let room = DispatchSemaphore(value: 0)
    /// The last sequence committed (by any thread).
    private let committed: Atomic<UInt64>

    /// Batches waiting for the background worker, and what it tells when done.
    private struct HandOffs {
        var waiting: [CommitBatch] = []
        var waitingEntries = 0
        var listener: (any JournalListener)?
        var working = false
        /// The host waits on `room` for the backlog to shrink.
        var hostWaits = false
        var failure: (any Error)?
        var closed = false

        mutating func takeWaiting() -> [CommitBatch] {
            defer {
                waiting.removeAll()
                waitingEntries = 0
            }
            return waiting
        }
    }

    /// A writer for an instance whose `record` (as last committed) carries this host's `owner` claim.
    init(store: WorkflowStore, instanceID: String, record: InstanceRecord, configuration: DurableConfiguration) {
        self.store = store
        self.instanceID = instanceID
        self.owner = record.owner
        self.configuration = configuration
        self.committed = Atomic(record.lastSequence)
        self.writing = Lock(record)
    }

    /// Every entry up to this sequence is committed.
    var committedThrough: UInt64 { committed.load(ordering: .acquiring) }

    /// Queues `batch` for the background worker, which commits it (with any other batch waiting)
    /// and then calls `listener.journalDidCommit(through:)` or `journalDidFail(_:)`; after a
    /// failure, abandons it and throws that failure. While
    /// `backlog` entries or more already wait, blocks until the worker takes them: a host that
    /// outpaces the disk is slowed to its pace instead of holding ever more in memory.
    func handOff(_ batch: CommitBatch, listener: any JournalListener, backlog: Int) throws {
        while true {
            let startWorker = try handedOff.withLock { state -> Bool? in
                if let failure = state.failure {
                    batch.abandon()
                    throw failure
                }
                if state.working && state.waitingEntries >= backlog {
                    state.hostWaits = true
                    return nil
                }
                state.waiting.append(batch)
                state.waitingEntries += batch.entries.count
                state.listener = listener
                if state.working { return false }
                state.working = true
                return true
            }
            guard let startWorker else {
                room.wait()
                continue
            }
            if startWorker {
                DispatchQueue.global().async { self.work() }
            }
            return
        }
    }

    /// Commits whatever was handed off and `batch`, on this thread, after any commit in flight;
    /// on failure, abandons them all and throws.
    func commitNow(_ batch: CommitBatch) throws {
        try writing.withLock { record in
            var batches = try handedOff.withLock { state -> [CommitBatch] in
                if let failure = state.failure {
                    batch.abandon()
                    throw failure
                }
                return state.takeWaiting()
            }
            batches.append(batch)
            do {
                try write(batches, record: &record)
            } catch {
                handedOff.withLock { $0.failure = error }
                for batch in batches { batch.abandon() }
                throw error
            }
        }
    }

    /// The host stopped: abandons what waits, waits for a commit in flight, and clears this
    /// host's claim on the instance.
    func close() {
        let abandoned = handedOff.withLock { state -> [CommitBatch] in
            state.closed = true
            state.listener = nil
            return state.takeWaiting()
        }
        for batch in abandoned { batch.abandon() }
        let record = writing.withLock { $0 }
        store.releaseOwnership(of: instanceID, record: record, owner: owner)
    }

    /// The background worker: commits waiting batches until none is left.
    private func work() {
        while true {
            var listener: (any JournalListener)?
            let result: Result<UInt64, any Error>? = writing.withLock { record in
                var wakeHost = false
                let taken = handedOff.withLock { state -> [CommitBatch]? in
                    wakeHost = state.hostWaits
                    state.hostWaits = false
                    if state.waiting.isEmpty || state.failure != nil || state.closed {
                        state.working = false
                        return nil
                    }
                    listener = state.listener
                    state.listener = nil
                    return state.takeWaiting()
                }
                if wakeHost { room.signal() }
                guard let batches = taken, let last = batches.last?.entries.last else { return nil }
                do {
                    try write(batches, record: &record)
                    return .success(last.sequence)
                } catch {
                    let abandoned = handedOff.withLock { state -> [CommitBatch] in
                        state.failure = error
                        wakeHost = state.hostWaits
                        state.hostWaits = false
                        return state.takeWaiting()
                    }
                    if wakeHost { room.signal() }
                    for batch in batches + abandoned { batch.abandon() }
                    return .failure(error)
                }
            }
            switch result {
            case nil: return
            case .success(let sequence)?: listener?.journalDidCommit(through: sequence)
            case .failure(let error)?: listener?.journalDidFail(error)
            }
        }
    }

    /// Writes the batches' entries, snapshots and attachments and the index record in one
    /// transaction; `record` becomes the committed index state.
    private func write(_ batches: [CommitBatch], record: inout InstanceRecord) throws {
        guard let last = batches.last(where: { !$0.isEmpty })?.entries.last else { return }
        let durability: EnvironmentConfiguration.Durability?
        if case .processCrashSafe(let interval) = configuration.mode {
            durability = .noSync
            store.scheduleBackgroundSync(every: interval)
        } else {
            durability = nil
        }
        let layout = store.layout, key = record.key, cached = record, owner = self.owner
        let codec = configuration.codec, observed = !configuration.observers.isEmpty
        var written: [LogEntry] = []
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        let started = ContinuousClock.now
        do {
            record = try store.environment.write(durability: durability) { txn in
                // The environment runs this closure again after growing a full map: start afresh.
                written.removeAll(keepingCapacity: true)
                payload.removeAll(keepingCapacity: true)
                // Read-modify-write, so a status set meanwhile (complete) is kept.
                let stored = try txn.value(forKey: cached.stateKey, in: layout.log) { cached.withState($0) }
                var updated = stored ?? cached
                guard updated.owner == owner else { throw self.inUse(by: updated.owner, at: last.sequence) }
                updated.lastSequence = last.sequence
                updated.updated = last.time
                if let snapshot = batches.last(where: { !$0.snapshots.isEmpty })?.snapshots.last {
                    updated.lastSnapshot = snapshot.sequence
                }
                // One cursor for every entry: consecutive keys mostly land on the page it stands on.
                try txn.withCursor(on: layout.log) { cursor in
                    // The newest instance's index state is the last key of the log: it is lifted off
                    // and put back after the new entries, so that each lands after the last key of
                    // its page. (Inserted before a key that stays last, each entry that fills a page
                    // made LMDB split it in half, and the log's pages stayed half empty.)
                    var atEnd = try cursor.last().map { try $0.key(as: LogKey.self) == cached.stateKey } ?? false
                    if atEnd { try cursor.deleteCurrent() }
                    for batch in batches {
                        // Targets change rarely within a batch: each is copied out, and the
                        // bytes naming it made, once.
                        var targetIndex = -1
                        var target: EntryTarget?
                        var targetBytes: [UInt8] = []
                        for pending in batch.entries {
                            if pending.target != targetIndex {
                                targetIndex = pending.target
                                target = batch.targets[targetIndex]
                                targetBytes = LogEntry.targetBytes(
                                    nodePath: target!.nodePath, actionTag: target!.actionTag, actionVersion: target!.actionVersion)
                            }
                            let start = try self.write(
                                pending, of: batch, target: target!, targetBytes: targetBytes, codec: codec, payload: &payload,
                                cursor: cursor, key: key, atEnd: &atEnd)
                            if observed { written.append(pending.entry(target: target!, payload: Array(payload[start...]))) }
                        }
                    }
                    let state = updated.encodedState()
                    let fill = { (target: UnsafeMutableRawBufferPointer) in state.withUnsafeBytes { target.copyMemory(from: $0) } }
                    if atEnd, try cursor.reserveAtEnd(state.count, forKey: updated.stateKey, fill) { return }
                    try cursor.reserve(state.count, forKey: updated.stateKey, fill)
                }
                for batch in batches {
                    for snapshot in batch.snapshots {
                        try txn.put(snapshot.encoded(), forKey: LogKey(instance: key, sequence: snapshot.sequence), in: layout.snapshots)
                    }
                    for attachment in batch.attachments { try attachment.write(in: txn) }
                }
                return updated
            }
            committed.store(last.sequence, ordering: .releasing)
        } catch let error as LMDBError {
            throw DurableError.storage(error, store: store.path, instance: instanceID)
        }
        if observed {
            let duration = ContinuousClock.now - started
            for observer in configuration.observers {
                for entry in written { observer.didAppend(entry, instance: instanceID) }
                observer.didCommit(instance: instanceID, batchSize: written.count, lastSequence: last.sequence, duration: duration)
            }
        }
        for batch in batches {
            for attachment in batch.attachments { attachment.didCommit() }
        }
    }

    /// Encodes `pending`'s payload onto the end of `payload` and writes its record in space reserved
    /// in the map: appended (`MDB_APPEND`: no search from the root) while `atEnd` (nothing follows
    /// the instance's entries in the log, as for the newest instance once its index state is
    /// lifted off), else inserted; an append that finds a later key clears `atEnd`. Returns where
    /// in `payload` the entry's payload starts.
    private func write(
        _ pending: PendingEntry, of batch: borrowing CommitBatch, target: EntryTarget, targetBytes: [UInt8],
        codec: any PayloadCodec, payload: inout [UInt8],
        cursor: borrowing Cursor<LogKey, [UInt8], ReadWrite>, key: UInt64, atEnd: inout Bool
    ) throws -> Int {
        // Payloads go one after another, and the buffer is emptied once it holds 64 KiB:
        // emptying it for every entry cost a fortieth of a small action's commit.
        if payload.count >= 1 << 16 { payload.removeAll(keepingCapacity: true) }
        let start = payload.count
        do {
            try batch.appendPayload(of: pending, encoding: target.encoding, codec: codec, to: &payload)
        } catch {
            throw DurableError(.notCodable, store: store.path, instance: instanceID, sequence: pending.sequence,
                               actionTag: target.actionTag, nodePath: target.nodePath.description,
                               detail: "the action could not be encoded: \(error)")
        }
        let size = LogEntry.recordSize(targetCount: targetBytes.count, payloadCount: payload.count - start, hasDigest: pending.digest != nil)
        var keyBytes = LogKey.bytes(instance: key, sequence: pending.sequence)
        let space = try withUnsafeBytes(of: &keyBytes) { keyBytes throws(LMDBError) in
            if atEnd, let space = try cursor.reserve(size, forKeyBytes: keyBytes, append: true) { return space }
            atEnd = false
            return try cursor.reserve(size, forKeyBytes: keyBytes, append: false)!
        }
        let count = targetBytes.withUnsafeBytes { targetBytes in
            payload.withUnsafeBytes { payload in
                LogEntry.writeRecord(
                    into: space.baseAddress!, sequence: pending.sequence, time: pending.time, origin: pending.origin,
                    target: targetBytes, payload: UnsafeRawBufferPointer(rebasing: payload[start...]), digest: pending.digest)
            }
        }
        precondition(count == size, "log entry size miscounted")
        return start
    }

    private func inUse(by other: InstanceOwner, at sequence: UInt64) -> DurableError {
        DurableError(.instanceInUse, store: store.path, instance: instanceID, sequence: sequence,
                     detail: "another host (process \(other.pid)) has taken over the instance; this host's uncommitted actions were not written",
                     recovery: "Run each instance in one host at a time")
    }
}
