import Workflow
import WorkflowStorage

/// Every node's state at one sequence of an instance (time travel, read-only).
public struct StateTree: Sendable {
    /// One node.
    public struct Node: Sendable {
        /// Where it is in the tree.
        public let path: NodePath
        /// Its state, encoded with the instance's codec.
        public let encodedState: [UInt8]
        /// The encoded state as JSON text (`BinaryPayloadCodec` and JSON codecs; other codecs'
        /// bytes read as UTF-8).
        public var stateText: String { BinaryPayloadCodec.jsonText(encodedState) ?? String(decoding: encodedState, as: UTF8.self) }
    }

    /// The instance.
    public let instance: String
    /// The sequence the states are at.
    public let sequence: UInt64
    /// Every node, in path order.
    public let nodes: [Node]
    /// The digest of these states (as recorded in log entries).
    public let digest: UInt64
    /// The codec the states are encoded with (the instance's).
    public let codec: any PayloadCodec
    /// What the tree waits for at that sequence: its declared workers (timers, signal waits,
    /// tasks, other workers), in path and key order.
    public let waits: [Wait]
    /// How many digests the replay could not compare: recorded under a state form this build
    /// cannot take its states back to (``StateRevision/removed(_:in:)``,
    /// ``StateRevision/changed(in:_:)``, or a form newer than this build's).
    public let uncheckedDigests: Int
    /// What the log says the tree declared after `sequence` (`nil`: it does not tell), for a
    /// replay gate's render diff.
    var recordedWorkers: [String: Int]?
    /// The sequence the replay started from (a snapshot's, or 1).
    var replayedFrom: UInt64 = 1
    /// What the instance's idempotency keys begin with (``InstanceNaming``).
    var idempotencyPrefix = ""


    /// A worker the tree declares, and what it waits for.
    public struct Wait: Sendable, Hashable {
        /// What kind of wait.
        public enum Kind: Sendable, Hashable {
            /// A durable timer, due at `deadline`.
            case timer(deadline: WallTime)
            /// Versions of the signal with this id.
            case signal(String)
            /// A task's next attempt, not before `notBefore` (after a failed attempt).
            case task(attempt: Int, notBefore: WallTime?)
            /// Another worker (its type name).
            case worker(String)
        }

        /// The declaring node.
        public let path: NodePath
        /// The worker's key in that node.
        public let key: String
        /// What it waits for.
        public let kind: Kind
        /// The key the worker runs (or will run, when resumed) under: `<instance><path>#<key>@<sequence>`.
        public let idempotencyKey: String
    }

    /// The root's state decoded as `State`.
    public func rootState<State: Decodable>(as type: State.Type) throws -> State {
        try codec.decode(type, from: nodes.min { $0.path.segments.count < $1.path.segments.count }!.encodedState)
    }

    /// The state of the node at `path` decoded as `State`, or `nil` when there is no such node.
    public func state<State: Decodable>(at path: NodePath, as type: State.Type) throws -> State? {
        try nodes.first { $0.path == path }.map { try codec.decode(type, from: $0.encodedState) }
    }
}

/// What ``WorkflowStore/verify(id:as:configuration:)`` found.
public struct VerificationReport: Sendable {
    /// The instance.
    public let instance: String
    /// Entries replayed from the start.
    public let entries: UInt64
    /// The snapshot the second replay started from (0: none).
    public let snapshotSequence: UInt64
    /// The digest after a full replay.
    public let fullReplayDigest: UInt64?
    /// The digest after snapshot + tail replay.
    public let snapshotReplayDigest: UInt64?
    /// The first problem: a divergence, an undecodable or corrupt entry, or snapshot ≠ full replay.
    public let problem: DurableError?
    /// Why the latest snapshot does not fit this build (a state that does not decode as this
    /// build's type, or children its render no longer declares), when it does not: resumes and
    /// time travel replay the whole log instead, so it is no inconsistency, but worth a new
    /// snapshot (`WorkflowStore.snapshot(id:as:configuration:)`).
    public let unusableSnapshot: String?
    /// How many of the log's digests the replay from the first entry could not compare
    /// (recorded under a state form this build cannot take its states back to).
    public let uncheckedDigests: Int

    package init(
        instance: String, entries: UInt64, snapshotSequence: UInt64, fullReplayDigest: UInt64?, snapshotReplayDigest: UInt64?,
        problem: DurableError?, unusableSnapshot: String? = nil, uncheckedDigests: Int = 0
    ) {
        self.uncheckedDigests = uncheckedDigests
        self.instance = instance
        self.entries = entries
        self.snapshotSequence = snapshotSequence
        self.fullReplayDigest = fullReplayDigest
        self.snapshotReplayDigest = snapshotReplayDigest
        self.problem = problem
        self.unusableSnapshot = unusableSnapshot
    }

    /// Whether replay agrees with the log and snapshots.
    public var isConsistent: Bool { problem == nil }
}

extension WorkflowStore {
    /// The state tree of instance `id` right after entry `sequence` (default: the last), rebuilt
    /// by replay from the nearest earlier snapshot (`usingSnapshots: false`: from the first
    /// entry, what this build's code computes from the log alone). Read-only: no worker or side
    /// effect runs.
    public func state<W: DurableWorkflow>(
        of id: String, as type: W.Type, at sequence: UInt64? = nil, usingSnapshots: Bool = true,
        configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> StateTree where W.Rendering: Sendable, W.Output: Sendable {
        try rebuild(id: id, as: type, through: sequence, useSnapshot: usingSnapshots, configuration: configuration)
    }

    /// Replays instance `id` from its first entry checking every recorded digest, then again from
    /// its latest snapshot, and compares the two (rules D4, D5).
    public func verify<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> VerificationReport where W.Rendering: Sendable, W.Output: Sendable {
        guard let record = try record(id: id) else { throw notFound(id) }
        let full: StateTree
        do {
            full = try rebuild(id: id, as: type, through: nil, useSnapshot: false, configuration: configuration)
        } catch let error as DurableError where error.kind != .storage && error.kind != .instanceNotFound && error.kind != .wrongWorkflowType {
            return VerificationReport(instance: id, entries: record.lastSequence, snapshotSequence: record.lastSnapshot,
                                      fullReplayDigest: nil, snapshotReplayDigest: nil, problem: error)
        }
        guard record.lastSnapshot > 0 else {
            return VerificationReport(instance: id, entries: record.lastSequence, snapshotSequence: 0,
                                      fullReplayDigest: full.digest, snapshotReplayDigest: nil, problem: nil,
                                      uncheckedDigests: full.uncheckedDigests)
        }
        let fromSnapshot: StateTree
        do {
            fromSnapshot = try rebuildOnce(id: id, as: type, through: nil, useSnapshot: true, configuration: configuration)
        } catch let mismatch as SnapshotMismatch {
            // Not a divergence: a resume replays the whole log, which is consistent.
            return VerificationReport(instance: id, entries: record.lastSequence, snapshotSequence: record.lastSnapshot,
                                      fullReplayDigest: full.digest, snapshotReplayDigest: nil, problem: nil,
                                      unusableSnapshot: "\(mismatch): a resume replays the whole log", uncheckedDigests: full.uncheckedDigests)
        }
        let problem = fromSnapshot.digest == full.digest ? nil : DurableError(
            .nonDeterministic, store: path, instance: id, sequence: record.lastSequence,
            detail: "replay from snapshot \(record.lastSnapshot) gives digest \(hex(fromSnapshot.digest)), full replay gives \(hex(full.digest))",
            recovery: "This build computes another state from the whole log than the one the snapshot recorded: the code changed "
                + "what entries before the snapshot do. A resume starts from the snapshot (the state the writing build computed); "
                + "a replay from the first entry (an import of an export, time travel before the snapshot) gives this build's. "
                + "Keep the old behaviour for the instances that logged those entries")
        return VerificationReport(instance: id, entries: record.lastSequence, snapshotSequence: record.lastSnapshot,
                                  fullReplayDigest: full.digest, snapshotReplayDigest: fromSnapshot.digest, problem: problem,
                                  uncheckedDigests: full.uncheckedDigests)
    }

    /// Takes a snapshot of instance `id` at its last entry now (rebuilt by replay, read-only for
    /// the running host, if any); later resumes start from it. Returns its sequence.
    @discardableResult
    public func snapshot<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> UInt64 where W.Rendering: Sendable, W.Output: Sendable {
        let snapshot = try withSnapshotFallback(id: id, useSnapshot: true, logger: configuration.logger) { useSnapshot in
            try captureSnapshot(id: id, as: type, useSnapshot: useSnapshot, configuration: configuration)
        }
        try storageCall(instance: id) { () throws(StorageFailure) in
            try backend.putSnapshot(id: id, sequence: snapshot.sequence, bytes: snapshot.encoded())
        }
        return snapshot.sequence
    }

    /// A snapshot of instance `id` at its last entry, rebuilt by replay.
    private func captureSnapshot<W: DurableWorkflow>(
        id: String, as type: W.Type, useSnapshot: Bool, configuration: DurableConfiguration
    ) throws -> Snapshot where W.Rendering: Sendable, W.Output: Sendable {
        let plan = try replayPlan(id: id, as: type, through: nil, useSnapshot: useSnapshot, configuration: configuration)
        let configuration = plan.configuration
        var captured: Result<Snapshot, any Error>?
        let versions = plan.makeVersions()
        try WorkflowHost<W>.inspect(
            workflow: plan.root, configuration: configuration.host, restorer: plan.restorer, versions: versions,
            initialSequence: plan.baseSequence, pathNaming: plan.pathNaming,
            replay: { driver in try self.replay(plan, driver: driver, versions: versions) },
            inspect: { tree in
                captured = Result {
                    let props = try StateCoding.encode(tree.rootWorkflow(), codec: configuration.codec, what: "root props",
                                                       store: self.path, instance: id)
                    return try Snapshot.capture(sequence: plan.target, rootProps: props, tree: tree, codec: configuration.codec,
                                                store: self.path, instance: id, versionMarkers: versions?.markers ?? [:])
                }
            })
        return try captured!.get()
    }

    /// The state tree of `id` after entry `through`, replayed without checking recorded digests.
    func stateTree<W: DurableWorkflow>(
        of id: String, as type: W.Type, through: UInt64, configuration: DurableConfiguration
    ) throws -> StateTree where W.Rendering: Sendable, W.Output: Sendable {
        var unchecked = configuration
        unchecked.checksRecordedDigests = false
        return try rebuild(id: id, as: type, through: through, useSnapshot: true, configuration: unchecked)
    }

    /// The state tree of `id` after entry `through` (default: the last), replayed from the
    /// latest snapshot at or before it when `useSnapshot` and the snapshot fits this build, else
    /// from the first entry.
    func rebuild<W: DurableWorkflow>(
        id: String, as type: W.Type, through: UInt64?, useSnapshot: Bool, configuration: DurableConfiguration
    ) throws -> StateTree where W.Rendering: Sendable, W.Output: Sendable {
        try withSnapshotFallback(id: id, useSnapshot: useSnapshot, logger: configuration.logger) { useSnapshot in
            try rebuildOnce(id: id, as: type, through: through, useSnapshot: useSnapshot, configuration: configuration)
        }
    }

    /// ``rebuild(id:as:through:useSnapshot:configuration:)`` without the fallback: a snapshot
    /// that does not fit throws ``SnapshotMismatch``.
    func rebuildOnce<W: DurableWorkflow>(
        id: String, as type: W.Type, through: UInt64?, useSnapshot: Bool, configuration: DurableConfiguration
    ) throws -> StateTree where W.Rendering: Sendable, W.Output: Sendable {
        let plan = try replayPlan(id: id, as: type, through: through, useSnapshot: useSnapshot, configuration: configuration)
        let configuration = plan.configuration
        var nodes: [StateTree.Node] = []
        var waits: [StateTree.Wait] = []
        var digest: UInt64 = 0
        var inspectionError: (any Error)?
        var summary: ReplaySummary?
        let versions = plan.makeVersions()
        let prefix = plan.idempotencyPrefix
        try WorkflowHost<W>.inspect(
            workflow: plan.root, configuration: configuration.host, restorer: plan.restorer, versions: versions,
            initialSequence: plan.baseSequence, pathNaming: plan.pathNaming,
            replay: { driver in try self.replay(plan, driver: driver, versions: versions) { summary = $0 } },
            inspect: { tree in
                do {
                    for (path, state) in tree.nodeStates() {
                        let bytes = try StateCoding.encode(state, codec: configuration.codec, what: path.description, store: self.path, instance: id)
                        nodes.append(StateTree.Node(path: path, encodedState: bytes))
                    }
                    digest = try StateDigests(codec: configuration.codec, store: self.path, instance: id).digest(of: tree)
                    waits = tree.declaredWorkers().map { StateTree.Wait($0, prefix: prefix) }
                } catch {
                    inspectionError = error
                }
            })
        if let inspectionError { throw inspectionError }
        var tree = StateTree(instance: id, sequence: plan.target, nodes: nodes, digest: digest, codec: configuration.codec, waits: waits,
                             uncheckedDigests: summary?.uncheckedDigests ?? 0)
        tree.recordedWorkers = summary?.recordedWorkers
        tree.replayedFrom = plan.baseSequence
        tree.idempotencyPrefix = prefix
        return tree
    }
}

extension StateTree.Wait {
    /// The wait of `worker`, whose idempotency key begins with `prefix` (the instance's id, and
    /// its incarnation: ``InstanceNaming``).
    init(_ worker: DeclaredWorker, prefix: String) {
        path = worker.path
        key = worker.key
        idempotencyKey = "\(prefix)\(worker.path)#\(worker.key)@\(worker.sequence)"
        switch worker.wait {
        case .timer(let deadline)?: kind = .timer(deadline: deadline)
        case .signal(let signal)?: kind = .signal(signal)
        case .task(let attempt, let notBefore)?: kind = .task(attempt: attempt, notBefore: notBefore)
        case nil: kind = .worker(worker.workerType)
        }
    }
}
