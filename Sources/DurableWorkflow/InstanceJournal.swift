import LMDB
import Workflow

/// The runtime's journal for one durable instance: turns applied actions into log entries and
/// commits them per the mode, with digests and snapshots. Runs on the thread running the host.
final class InstanceJournal: RuntimeJournal {
    let store: WorkflowStore
    let instanceID: String
    private let instanceKey: UInt64
    private let configuration: DurableConfiguration
    private var record: InstanceRecord
    private var pending: [LogEntry] = []
    private var pendingSnapshot: Snapshot?
    private var commitScheduled = false
    private var pendingAttachments: [any CommitAttachment] = []
    private(set) var currentSequence: UInt64
    /// This host's claim on the instance (stored with the index state).
    private let owner: InstanceOwner
    /// Each action and state type's encoder, found once.
    private let encoders = EncoderCache()

    /// A journal for an instance whose `record` already carries this host's `owner` claim.
    init(store: WorkflowStore, instanceID: String, record: InstanceRecord, configuration: DurableConfiguration) {
        self.store = store
        self.instanceID = instanceID
        self.instanceKey = record.key
        self.owner = record.owner
        self.record = record
        self.configuration = configuration
        self.currentSequence = record.lastSequence
    }

    func record(
        action: any WorkflowAction, at path: NodePath, origin: ActionOrigin, time: WallTime, attachment: (any Sendable)?,
        tree: any RuntimeTree
    ) throws {
        try record(opened: action, at: path, origin: origin, time: time)
        if let attachment, let attachment = attachment as? any CommitAttachment { pendingAttachments.append(attachment) }
    }

    private func record<A: WorkflowAction>(opened action: A, at path: NodePath, origin: ActionOrigin, time: WallTime) throws {
        guard let encoder = encoders.actionEncoder(for: A.self) else {
            throw DurableError(
                .actionNotDurable, store: store.path, instance: instanceID, sequence: currentSequence + 1, nodePath: path.description,
                detail: "\(A.self) was applied to a durable host but is not a DurableAction, so it cannot be logged",
                recovery: "Make the action Codable and conform it to DurableAction (and register it)")
        }
        let payload: [UInt8]
        do {
            payload = try withUnsafePointer(to: action) { try encoder.encode(UnsafeRawPointer($0), configuration.codec) }
        } catch {
            throw DurableError(.notCodable, store: store.path, instance: instanceID, sequence: currentSequence + 1,
                               actionTag: encoder.tag, nodePath: path.description,
                               detail: "the action could not be encoded: \(error)")
        }
        append(LogEntry(
            sequence: currentSequence + 1, time: time, origin: origin, nodePath: path,
            actionTag: encoder.tag, actionVersion: encoder.version, payload: payload, digest: nil))
    }

    func record(props: any Sendable, time: WallTime, tree: any RuntimeTree) throws {
        let rootProps = try StateCoding.encode(props, codec: configuration.codec, what: "root props", store: store.path, instance: instanceID)
        append(LogEntry(
            sequence: currentSequence + 1, time: time, origin: .props, nodePath: WorkflowStore.rootPath(of: type(of: props)),
            actionTag: LogEntry.propsTag, actionVersion: 1, payload: rootProps, digest: nil))
    }

    private func append(_ entry: LogEntry) {
        pending.append(entry)
        currentSequence = entry.sequence
    }

    func renderPassDidFinish(tree: any RuntimeTree) throws -> Bool {
        if case .every(let interval) = configuration.digests, interval > 0, currentSequence % UInt64(interval) == 0,
           let last = pending.last {
            let digest = try StateCoding.digest(of: tree, encoders: encoders, codec: configuration.codec, store: store.path, instance: instanceID)
            pending[pending.count - 1] = LogEntry(
                sequence: last.sequence, time: last.time, origin: last.origin, nodePath: last.nodePath,
                actionTag: last.actionTag, actionVersion: last.actionVersion, payload: last.payload, digest: digest)
        }
        if let every = configuration.snapshotEvery, every > 0, currentSequence % UInt64(every) == 0 {
            // The root's props as the tree holds them now (a resume may have replayed props updates).
            let props = try StateCoding.encode(tree.rootWorkflow(), codec: configuration.codec, what: "root props",
                                               store: store.path, instance: instanceID)
            pendingSnapshot = try Snapshot.capture(
                sequence: currentSequence, rootProps: props, tree: tree, codec: configuration.codec,
                store: store.path, instance: instanceID)
        }
        switch configuration.mode {
        case .strict, .processCrashSafe:
            try commit()
            return true
        case .grouped(let maxBatch, _):
            if pending.count >= maxBatch { try commit() }
            return pending.isEmpty
        }
    }

    func hostDidStop() {
        for attachment in pendingAttachments { attachment.didAbandon() }
        pendingAttachments.removeAll()
        store.releaseOwnership(of: instanceID, record: record, owner: owner)
    }

    private func inUse(by other: InstanceOwner) -> DurableError {
        DurableError(.instanceInUse, store: store.path, instance: instanceID, sequence: currentSequence,
                     detail: "another host (process \(other.pid)) has taken over the instance; this host's uncommitted actions were not written",
                     recovery: "Run each instance in one host at a time")
    }

    func commitPending(force: Bool, commitLater: @escaping @Sendable () -> Void) throws -> Bool {
        if case .grouped(_, let delay) = configuration.mode, !force, !pending.isEmpty, delay > .zero {
            if !commitScheduled {
                commitScheduled = true
                Task.detached {
                    try? await Task.sleep(for: delay)
                    commitLater()
                }
            }
            return false
        }
        try commit()
        return true
    }

    /// Writes pending entries, the index record and any snapshot in one transaction.
    private func commit() throws {
        guard !pending.isEmpty else { return }
        let durability: EnvironmentConfiguration.Durability?
        if case .processCrashSafe(let interval) = configuration.mode {
            durability = .noSync
            store.scheduleBackgroundSync(every: interval)
        } else {
            durability = nil
        }
        let layout = store.layout, key = instanceKey, entries = pending, snapshot = pendingSnapshot
        let attachments = pendingAttachments
        let last = currentSequence, cached = record
        let started = ContinuousClock.now
        do {
            record = try store.environment.write(durability: durability) { txn in
                for entry in entries {
                    try txn.put(entry.encoded(), forKey: LogKey(instance: key, sequence: entry.sequence), in: layout.log)
                }
                if let snapshot {
                    try txn.put(snapshot.encoded(), forKey: LogKey(instance: key, sequence: snapshot.sequence), in: layout.snapshots)
                }
                for attachment in attachments { try attachment.write(in: txn) }
                // Read-modify-write, so a status set meanwhile (complete) is kept.
                let stored = try txn.value(forKey: cached.stateKey, in: layout.log) { cached.withState($0) }
                var updated = stored ?? cached
                guard updated.owner == owner else { throw self.inUse(by: updated.owner) }
                updated.lastSequence = last
                updated.updated = entries.last!.time
                if let snapshot { updated.lastSnapshot = snapshot.sequence }
                try txn.put(updated.encodedState(), forKey: updated.stateKey, in: layout.log)
                return updated
            }
        } catch let error as LMDBError {
            throw DurableError.storage(error, store: store.path, instance: instanceID)
        }
        if !configuration.observers.isEmpty {
            let duration = ContinuousClock.now - started
            for observer in configuration.observers {
                for entry in entries { observer.didAppend(entry, instance: instanceID) }
                observer.didCommit(instance: instanceID, batchSize: entries.count, lastSequence: last, duration: duration)
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingAttachments.removeAll()
        pendingSnapshot = nil
        commitScheduled = false
        for attachment in attachments { attachment.didCommit() }
    }
}
