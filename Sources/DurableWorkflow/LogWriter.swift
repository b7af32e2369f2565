import Dispatch
import Foundation
import Synchronization
import Workflow
import WorkflowLocks
import WorkflowStorage

/// One instance's side of the store's ``CommitPipeline``: the batches its host hands in, waiting
/// in order, and what the pipeline's committer needs to write and settle them.
///
/// A batch is handed in for a background commit (group commits: the host goes on applying
/// actions meanwhile and hears of the commit through its listener) or committed before the host
/// goes on (strict and processCrashSafe commits, and whenever the host must wait). Either way it
/// is written by the pipeline, with every other instance's waiting batches, in one transaction.
/// A failed commit is final: later batches are abandoned (they would leave a gap in the log).
final class LogWriter: Sendable {
    let store: WorkflowStore
    let instanceID: String
    let configuration: DurableConfiguration
    private let owner: InstanceOwner
    /// The backend's key for the instance, which its commits name it by (it never changes).
    let instanceKey: UInt64
    private let handedOff = Lock(HandOffs())
    /// Signalled when the committer takes the waiting batches while the host waits for room.
    private let room = DispatchSemaphore(value: 0)
    /// Signalled after each round that settled batches of this writer, for a thread that waits.
    private let settled = DispatchSemaphore(value: 0)
    /// The last sequence committed.
    private let committed: Atomic<UInt64>
    /// Whether a round of the pipeline has taken this writer and not ended: read and written only
    /// under the pipeline's lock, which orders every access (an atomic only so that the class
    /// stays `Sendable` without a lock of its own).
    let inRound = Atomic<Bool>(false)

    /// Batches waiting for the pipeline, and where they stand.
    private struct HandOffs {
        var waiting: [CommitBatch] = []
        var waitingEntries = 0
        /// The sequence of the last entry handed in.
        var lastHandedIn: UInt64 = 0
        var listener: (any JournalListener)?
        /// Listed in the pipeline for its next round.
        var listed = false
        /// Taken by a round that has not settled yet.
        var inFlight = false
        /// The host waits on `room` for the backlog to shrink.
        var hostWaits = false
        /// A thread waits on `settled`.
        var settleWaits = false
        var failure: (any Error)?
        var closed = false
        /// A settled batch, emptied, for the host's next one (``recycle(_:)``).
        var spare: CommitBatch?

        mutating func takeWaiting() -> [CommitBatch] {
            defer {
                waiting.removeAll()
                waitingEntries = 0
            }
            return waiting
        }

        /// Moves `batch` to the waiting ones (a copy would retain each of its arrays and objects,
        /// and the host's thread release them again); whether the writer must be listed in the
        /// pipeline.
        mutating func append(taking batch: inout CommitBatch?) -> Bool {
            // A batch without entries writes nothing (its snapshots and attachments belong to
            // entries it would hold).
            guard let entries = batch?.entries.count, entries > 0, let last = batch?.entries.last?.sequence,
                  let taken = batch.take() else { return false }
            waiting.append(taken)
            waitingEntries += entries
            lastHandedIn = last
            let wasListed = listed
            listed = true
            return !wasListed
        }
    }

    /// A writer for an instance whose `record` (as last committed) carries this host's `owner` claim.
    init(store: WorkflowStore, instanceID: String, record: StoredInstance, configuration: DurableConfiguration) {
        self.store = store
        self.instanceID = instanceID
        self.owner = record.claim
        self.configuration = configuration
        self.committed = Atomic(record.lastSequence)
        instanceKey = record.key
        handedOff.withLock { $0.lastHandedIn = record.lastSequence }
    }

    /// Every entry up to this sequence is committed.
    var committedThrough: UInt64 { committed.load(ordering: .acquiring) }

    /// Queues `batch` for a background commit, after which the pipeline calls
    /// `listener.journalDidCommit(through:)` or `journalDidFail(_:)`; after a failure, abandons
    /// it and throws that failure. While `backlog` entries or more already wait, blocks until
    /// the committer takes them: a host that outpaces the disk is slowed to its pace instead of
    /// holding ever more in memory.
    func handOff(_ batch: consuming CommitBatch, listener: any JournalListener, backlog: Int) throws {
        var batch = Optional(batch)
        while true {
            let list = try handedOff.withLock { state -> Bool? in
                if let failure = state.failure {
                    batch?.abandon()
                    throw failure
                }
                if (state.listed || state.inFlight) && state.waitingEntries >= backlog {
                    state.hostWaits = true
                    return nil
                }
                state.listener = listener
                return state.append(taking: &batch)
            }
            guard let list else {
                room.wait()
                continue
            }
            if list { store.pipeline.submit(self) }
            return
        }
    }

    /// Commits whatever was handed in and `batch` before returning (sharing the commit with other
    /// instances' waiting batches); on failure, abandons what waits and throws.
    func commitNow(_ batch: consuming CommitBatch) throws {
        var batch = Optional(batch)
        let list = try handedOff.withLock { state -> Bool in
            if let failure = state.failure {
                batch?.abandon()
                throw failure
            }
            return state.append(taking: &batch)
        }
        store.pipeline.commit(self, list: list)
        if let failure = handedOff.withLock({ $0.failure }) { throw failure }
    }

    /// Whether everything handed in is committed, or this writer has failed or closed.
    var isSettled: Bool {
        handedOff.withLock { state in
            state.failure != nil || state.closed || (!state.listed && !state.inFlight && committedThrough >= state.lastHandedIn)
        }
    }

    /// Waits for the end of a round that settles batches of this writer (or returns at once if
    /// nothing of it is waiting or in flight any more).
    func waitForRound() {
        let wait = handedOff.withLock { state -> Bool in
            guard state.listed || state.inFlight else { return false }
            state.settleWaits = true
            return true
        }
        if wait { settled.wait() }
    }

    /// For the pipeline's committer: the waiting batches, now in flight; `nil` when nothing waits
    /// (closed, failed, or taken already).
    func takeForCommit() -> CommitParticipant? {
        var wakeHost = false
        let taken = handedOff.withLock { state -> (batches: [CommitBatch], listener: (any JournalListener)?)? in
            state.listed = false
            wakeHost = state.hostWaits
            state.hostWaits = false
            if state.waiting.isEmpty || state.failure != nil || state.closed { return nil }
            state.inFlight = true
            defer { state.listener = nil }
            return (state.takeWaiting(), state.listener)
        }
        if wakeHost { room.signal() }
        guard let taken else { return nil }
        return CommitParticipant(writer: self, batches: taken.batches, listener: taken.listener)
    }

    /// For the pipeline's committer, once the round is over: records the outcome, tells
    /// observers, attachments and the host, and wakes a thread waiting for it. The participant
    /// is only read (taken in place: a copy would retain everything it holds).
    func settle(_ participant: inout CommitParticipant, duration: Duration, onCommitter: Bool) {
        let last = participant.lastSequence ?? committedThrough
        if participant.failure == nil {
            committed.store(last, ordering: .releasing)
            for observer in configuration.observers {
                for entry in participant.written { observer.didAppend(entry, instance: instanceID) }
                observer.didCommit(instance: instanceID, batchSize: participant.written.count, lastSequence: last, duration: duration)
            }
            if participant.hasAttachmentsOrSpans {
                for index in participant.batches.indices {
                    for attachment in participant.batches[index].attachments { attachment.didCommit() }
                }
            }
            if let status = participant.status, status.hasEnded {
                configuration.logger.debug("an instance finished", metadata: [
                    "instance": "\(instanceID)", "sequence": "\(last)", "status": "\(status.rawValue)",
                ])
            }
        }
        var wakeHost = false, wakeWaiter = false
        let abandoned = handedOff.withLock { state -> (own: Bool, waiting: [CommitBatch]) in
            state.inFlight = false
            wakeWaiter = state.settleWaits
            state.settleWaits = false
            guard let failure = participant.failure, state.failure == nil else { return (false, []) }
            state.failure = failure
            wakeHost = state.hostWaits
            state.hostWaits = false
            return (true, state.takeWaiting())
        }
        if abandoned.own, let failure = participant.failure {
            configuration.logger.error("an instance stopped: its changes could not be committed", metadata: [
                "instance": "\(instanceID)", "error": "\(failure)",
            ])
        }
        if participant.hasAttachmentsOrSpans {
            for index in participant.batches.indices {
                if abandoned.own { participant.batches[index].abandonAttachments() }
                participant.batches[index].endSpans(failure: participant.failure)
            }
        }
        for batch in abandoned.waiting { batch.abandon() }
        if wakeHost { room.signal() }
        if wakeWaiter { settled.signal() }
        if let failure = participant.failure {
            participant.listener?.journalDidFail(failure)
        } else {
            participant.listener?.journalDidCommit(through: last, onCommitter: onCommitter)
        }
    }

    /// For the pipeline's committer, once `participant` is settled: its last batch, emptied,
    /// becomes the host's next (``takeSpare()``), and the array that held its batches the list
    /// of the next waiting ones. A batch that the host's thread allocates and the committer's
    /// frees costs both threads their allocator's slow path, for every action a host awaits.
    func recycle(_ participant: inout CommitParticipant) {
        var batches = participant.takeBatches()
        guard var batch = batches.popLast(), batch.emptyForReuse() else { return }
        batches.removeAll(keepingCapacity: true)
        // Swapped in rather than assigned: a batch holds several arrays and objects, and a copy
        // retains each of them (then releases them with the original).
        var spare = Optional(consume batch)
        handedOff.withLock { state in
            guard !state.closed, state.failure == nil else { return }
            if state.spare == nil { swap(&state.spare, &spare) }
            if state.waiting.isEmpty, state.waiting.capacity == 0 { swap(&state.waiting, &batches) }
        }
    }

    /// A settled batch, emptied, for the host's next (`nil` when none is spare).
    func takeSpare() -> CommitBatch? {
        handedOff.withLock { state in
            var spare: CommitBatch?
            swap(&spare, &state.spare)
            return spare
        }
    }

    /// The host stopped: abandons what waits, waits for a round in flight, and clears this
    /// host's claim on the instance.
    func close() {
        while true {
            let (abandoned, inFlight) = handedOff.withLock { state -> ([CommitBatch], Bool) in
                state.closed = true
                state.listener = nil
                if state.inFlight { state.settleWaits = true }
                return (state.takeWaiting(), state.inFlight)
            }
            for batch in abandoned { batch.abandon() }
            guard inFlight else { break }
            settled.wait()
        }
        store.releaseOwnership(of: instanceID, owner: owner)
    }

    /// Appends to a request's `changes` the participant's batches as the changes one commit makes
    /// to the instance: its entries encoded into log records, its snapshots and its signal
    /// delivery marks; returns whether it had any (made where they go: a copy would retain each
    /// of their arrays, and release them again). Throws ``DurableError/Kind/notCodable`` when an
    /// action cannot be encoded (the participant then fails alone, with nothing appended). When
    /// the instance has observers, `participant.written` gets the entries.
    func appendChanges(
        for participant: inout CommitParticipant, reusing scratch: inout ChangesScratch, to changes: inout [InstanceChanges]
    ) throws -> Bool {
        let batches = participant.batches
        participant.written.removeAll(keepingCapacity: true)
        guard let first = participant.firstSequence, let last = participant.lastSequence else { return false }
        let codec = configuration.codec, observed = !configuration.observers.isEmpty
        var records = LogRecords(firstSequence: first, capacity: Int(last - first + 1))
        var updated: Int64 = 0
        var payload = scratch.takePayload()
        defer { scratch.payload = payload }
        var written: [LogEntry] = []
        var snapshots: [(sequence: UInt64, bytes: [UInt8])] = []
        var marks: [DeliveryMarkRecord] = []
        for index in batches.indices {
            // Targets change rarely within a batch.
            var targetIndex = -1
            var encoding: (any ValueEncoding.Type)?
            var targetBytes: [UInt8] = []
            let notes = batches[index].notes
            var nextNote = 0
            for pending in batches[index].entries {
                if pending.target != targetIndex {
                    targetIndex = pending.target
                    encoding = batches[index].targets[targetIndex].encoding
                    targetBytes = batches[index].targets[targetIndex].recordBytes
                }
                // Payloads go one after another, and the buffer is emptied once it holds 64 KiB.
                if payload.count >= 1 << 16 { payload.removeAll(keepingCapacity: true) }
                let start = payload.count
                do {
                    try batches[index].appendPayload(of: pending, encoding: encoding, codec: codec, to: &payload)
                } catch {
                    let target = batches[index].targets[targetIndex]
                    throw DurableError(.notCodable, store: store.path, instance: instanceID, sequence: pending.sequence,
                                       actionTag: target.actionTag, nodePath: target.nodePath.description,
                                       detail: "the action could not be encoded: \(error)")
                }
                updated = pending.time.nanosecondsSinceEpoch
                // Notes are rare: most batches have none, and this is one comparison per entry.
                var entryNotes: EntryNotes?
                if nextNote < notes.count, notes[nextNote].sequence == pending.sequence {
                    entryNotes = notes[nextNote].notes
                    nextNote += 1
                }
                if let entryNotes {
                    Self.appendRecord(of: pending, target: targetBytes, payload: payload, from: start, notes: entryNotes.encoded(), to: &records)
                } else {
                    let size = LogEntry.recordSize(targetCount: targetBytes.count, payloadCount: payload.count - start, hasDigest: pending.digest != nil)
                    targetBytes.withUnsafeBytes { targetBytes in
                        payload.withUnsafeBytes { payload in
                            records.append(size: size) { space in
                                let count = LogEntry.writeRecord(
                                    into: space.baseAddress!, sequence: pending.sequence, time: pending.time, origin: pending.origin,
                                    target: targetBytes, payload: UnsafeRawBufferPointer(rebasing: payload[start...]), digest: pending.digest)
                                precondition(count == size, "log entry size miscounted")
                            }
                        }
                    }
                }
                if observed {
                    written.append(pending.entry(target: batches[index].targets[targetIndex], payload: Array(payload[start...]),
                                                 notes: entryNotes ?? EntryNotes()))
                }
            }
            for snapshot in batches[index].snapshots { snapshots.append((snapshot.sequence, snapshot.encoded())) }
            for attachment in batches[index].attachments { marks.append(attachment.deliveryMark) }
        }
        changes.append(InstanceChanges(id: instanceID, key: instanceKey, claim: owner, entries: records, updated: updated))
        let appended = changes.count - 1
        changes[appended].snapshots = snapshots
        changes[appended].deliveryMarks = marks
        if let status = participant.status { changes[appended].status = status }
        participant.written = written
        return true
    }

    /// Appends the record of `pending` with `notes` (out of line: few entries have notes).
    @inline(never)
    private static func appendRecord(
        of pending: PendingEntry, target: [UInt8], payload: [UInt8], from start: Int, notes: [UInt8], to records: inout LogRecords
    ) {
        let size = LogEntry.recordSize(targetCount: target.count, payloadCount: payload.count - start, hasDigest: pending.digest != nil,
                                       notesCount: notes.count)
        target.withUnsafeBytes { target in
            payload.withUnsafeBytes { payload in
                notes.withUnsafeBytes { notes in
                    records.append(size: size) { space in
                        let count = LogEntry.writeRecord(
                            into: space.baseAddress!, sequence: pending.sequence, time: pending.time, origin: pending.origin,
                            target: target, payload: UnsafeRawBufferPointer(rebasing: payload[start...]), digest: pending.digest, notes: notes)
                        precondition(count == size, "log entry size miscounted")
                    }
                }
            }
        }
    }

    /// The failure of a commit the store refused: another host holds the instance (or it was deleted).
    func refusal(current: InstanceClaim?, at sequence: UInt64) -> DurableError {
        guard let current else {
            return DurableError(.instanceNotFound, store: store.path, instance: instanceID, sequence: sequence,
                                detail: "the instance was deleted while its host ran; this host's uncommitted actions were not written",
                                recovery: "Stop a host before deleting its instance")
        }
        return inUse(by: current, at: sequence)
    }

    /// The failure of a commit the store refused because a delivery it carried was made already.
    func deliveredTwice(consumer: UUID, version: UInt64, at sequence: UInt64) -> DurableError {
        DurableError(.signalDeliveredTwice, store: store.path, instance: instanceID, sequence: sequence,
                     detail: "version \(version) of signal consumer \(consumer) was already delivered to this instance; the action it came with was not written",
                     recovery: "Resume the instance (its log holds the first delivery); report this: a delivery should never be handed over twice")
    }

    private func inUse(by other: InstanceOwner, at sequence: UInt64) -> DurableError {
        DurableError(.instanceInUse, store: store.path, instance: instanceID, sequence: sequence,
                     detail: "another host (process \(other.pid)) has taken over the instance; this host's uncommitted actions were not written",
                     recovery: "Run each instance in one host at a time")
    }
}

/// What the committer of a round reuses from one participant's changes to the next: the buffer
/// payloads are encoded into.
struct ChangesScratch {
    fileprivate var payload: [UInt8] = []

    /// The payload buffer, emptied (its storage kept).
    fileprivate mutating func takePayload() -> [UInt8] {
        var buffer = payload
        payload = []
        buffer.removeAll(keepingCapacity: true)
        if buffer.capacity == 0 { buffer.reserveCapacity(256) }
        return buffer
    }
}
