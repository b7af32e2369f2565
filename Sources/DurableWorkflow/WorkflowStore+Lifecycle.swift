import Dispatch
import Foundation
import Synchronization
import Workflow
import WorkflowLocks
import WorkflowStorage

extension WorkflowStore {
    /// Starts a new instance `id` of `workflow` with `firstAction` applied to its root: the props
    /// entry and the action's entry are committed together before this returns, so a crash
    /// leaves either no instance or one that has taken its first action (never one waiting in its
    /// initial state for an action nobody will send again). The host then runs like a resumed
    /// one: the action was applied by replay, so its workers and side effects start and its
    /// rendering is published, but a root output it emitted is not delivered on
    /// `WorkflowHost.outputs` (a final one still settles `WorkflowHost.completion`).
    ///
    /// Throws ``DurableError/Kind/actionNotRegistered`` (nothing is written) when the
    /// configuration's registry cannot decode `A`, and ``DurableError/Kind/instanceExists`` when
    /// `id` is taken.
    public func start<W: DurableWorkflow, A: DurableAction>(
        _ workflow: W, id: String, with firstAction: A, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        try checkID(id)
        if let refusal = configuration.refusal(of: A.self, store: path, instance: id) { throw refusal }
        let now = configuration.host.clock.now()
        let rootPath = Self.rootPath(of: W.self)
        let (first, forms) = try Self.firstActionEntry(
            firstAction, of: workflow, at: rootPath, time: now, configuration: configuration, store: path, instance: id)
        let entries = [try propsEntry(workflow, id: id, time: now, configuration: configuration), first]
        let record = try create(id: id, type: W.self, entries: entries, time: now, configuration: configuration)
        configuration.logger.debug("started an instance with its first action", metadata: [
            "instance": "\(id)", "workflow": "\(W.workflowName)", "action": "\(A.tag)",
        ])
        let versions = configuration.newInstanceVersions()
        let journal = InstanceJournal(store: self, instanceID: id, record: record, configuration: configuration, versions: versions)
        journal.recordedForms = forms
        return try WorkflowHost(
            workflow: workflow, configuration: configuration.hostConfiguration, journal: journal, versions: versions, initialSequence: 1,
            replay: { driver in try driver.apply(firstAction, at: rootPath, origin: .sink, time: now, sequence: 2) })
    }

    /// Resumes instance `id` if it exists, else starts it from `workflow` (with `firstAction`
    /// applied atomically, if given). Safe against a concurrent start of the same id by another
    /// process: the loser resumes what the winner created.
    public func startOrResume<W: DurableWorkflow, A: DurableAction>(
        _ workflow: W, id: String, with firstAction: A, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        try startOrResume(id: id, as: W.self, configuration: configuration) {
            try start(workflow, id: id, with: firstAction, configuration: configuration)
        }
    }

    /// Resumes instance `id` if it exists, else starts it from `workflow`.
    public func startOrResume<W: DurableWorkflow>(
        _ workflow: W, id: String, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        try startOrResume(id: id, as: W.self, configuration: configuration) {
            try start(workflow, id: id, configuration: configuration)
        }
    }

    private func startOrResume<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration, start: () throws -> WorkflowHost<W>
    ) throws -> WorkflowHost<W> where W.Rendering: Sendable, W.Output: Sendable {
        if try record(id: id) != nil { return try resume(id: id, as: type, configuration: configuration) }
        do {
            return try start()
        } catch let error as DurableError where error.kind == .instanceExists {
            return try resume(id: id, as: type, configuration: configuration)
        }
    }

    /// Resumes every `running` instance whose root is `W`, each on its own: one that cannot be
    /// resumed never stops the others. An instance whose log cannot be replayed (an unknown or
    /// undecodable action, a corrupt entry, a divergent replay) is marked `InstanceStatus.failed`
    /// and listed as such; fix the cause and ``resume(id:as:configuration:)`` it, which marks it
    /// running again. An instance another live host holds, or that a storage error kept from
    /// resuming, keeps its status, and so does one that fixed a version marker this build no
    /// longer supports (``DurableError/Kind/unsupportedVersion``). Instances started under a code
    /// version the configuration does not run (``DurableConfiguration/supportedCodeVersions``)
    /// are not claimed: each is listed with ``DurableError/Kind/unsupportedCodeVersion``, and one
    /// warning counts them by version. Results are in order of instance id.
    ///
    /// Where the backend serves several calls at once (`StorageBackend.concurrentCalls`:
    /// PostgreSQL, whose claims and reads are round trips), as many instances are resumed at
    /// once, each on a thread of its own; else one after another.
    public func resumeAll<W: DurableWorkflow>(
        _ type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> [ResumeResult<W>] where W.Rendering: Sendable, W.Output: Sendable {
        let typeName = W.workflowName
        let running = try storageCall(instance: nil) { () throws(StorageFailure) in try backend.instances() }
            .filter { $0.status == .running && $0.workflowType == typeName }
            .sorted { $0.id < $1.id }
        // Instances of code versions this build does not run are left as they are, unclaimed.
        var unsupported: [ResumeResult<W>] = []
        for record in running where !configuration.supportedCodeVersions.contains(record.codeVersion) {
            do {
                try checkCodeVersion(of: record, configuration: configuration)
            } catch let error as DurableError {
                unsupported.append(ResumeResult(id: record.id, outcome: .failure(error)))
            }
        }
        if !unsupported.isEmpty {
            let versions = Dictionary(grouping: running.filter { !configuration.supportedCodeVersions.contains($0.codeVersion) }) {
                $0.codeVersion ?? "none"
            }.mapValues(\.count).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            configuration.logger.warning("instances of code versions this build does not run are left for a build that runs them", metadata: [
                "workflow": "\(W.workflowName)", "count": "\(unsupported.count)", "versions": "\(versions)",
                "supported": "\(configuration.supportedCodeVersions)",
            ])
        }
        let ids = running.filter { configuration.supportedCodeVersions.contains($0.codeVersion) }.map(\.id)
        let resumed = resume(ids, as: type, configuration: configuration, checkingCodeVersions: false)
        return unsupported.isEmpty ? resumed : (resumed + unsupported).sorted { $0.id < $1.id }
    }

    /// Resumes instances `ids` of `W` (in that order in the result) as
    /// ``resumeAll(_:configuration:)`` does: an instance whose log cannot be replayed is marked
    /// failed, the others are resumed, each on its own.
    public func resume<W: DurableWorkflow>(
        _ ids: [String], as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) -> [ResumeResult<W>] where W.Rendering: Sendable, W.Output: Sendable {
        resume(ids, as: type, configuration: configuration, checkingCodeVersions: true)
    }

    private func resume<W: DurableWorkflow>(
        _ ids: [String], as type: W.Type, configuration: DurableConfiguration, checkingCodeVersions: Bool
    ) -> [ResumeResult<W>] where W.Rendering: Sendable, W.Output: Sendable {
        let workers = min(backend.concurrentCalls, ids.count)
        guard workers > 1 else {
            return ids.map { resumeForAll(id: $0, as: type, configuration: configuration, checkingCodeVersion: checkingCodeVersions) }
        }
        let results = Lock([ResumeResult<W>?](repeating: nil, count: ids.count))
        let next = Atomic(0)
        let resumeTheRest: @Sendable () -> Void = {
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < ids.count else { return }
                let result = self.resumeForAll(id: ids[index], as: type, configuration: configuration, checkingCodeVersion: checkingCodeVersions)
                results.withLock { $0[index] = result }
            }
        }
        let helpers = DispatchGroup()
        for _ in 1..<workers {
            helpers.enter()
            Thread.detachNewThread {
                resumeTheRest()
                helpers.leave()
            }
        }
        resumeTheRest()
        helpers.wait()
        return results.withLock { $0.map { $0! } }
    }

    /// ``resumeAll(_:configuration:)``'s resume of one instance: its host, or why it could not be
    /// resumed (an instance that cannot be replayed is marked failed).
    private func resumeForAll<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration, checkingCodeVersion: Bool
    ) -> ResumeResult<W> where W.Rendering: Sendable, W.Output: Sendable {
        do {
            return ResumeResult(id: id, outcome: .success(
                try resume(id: id, as: type, configuration: configuration, checkingCodeVersion: checkingCodeVersion)))
        } catch let error as DurableError {
            if error.kind.meansTheLogCannotBeReplayed {
                try? setStatus(.failed, id: id, failure: error)
                metrics.instancesFailed.increment()
                configuration.logger.error("an instance cannot be replayed and is marked failed", metadata: [
                    "instance": "\(id)", "workflow": "\(W.workflowName)", "error": "\(error)",
                ])
            } else {
                configuration.logger.warning("an instance could not be resumed", metadata: [
                    "instance": "\(id)", "workflow": "\(W.workflowName)", "error": "\(error)",
                ])
            }
            return ResumeResult(id: id, outcome: .failure(error))
        } catch {
            return ResumeResult(id: id, outcome: .failure(DurableError(
                .storage, store: path, instance: id, detail: "the instance could not be resumed: \(error)")))
        }
    }

    /// The log entry of `action` applied to a new root `workflow` at `time` (sequence 2), with
    /// the digest the configuration asks for at that sequence (and the state forms it was
    /// computed over, noted with it when they are not all of version 1).
    private static func firstActionEntry<W: DurableWorkflow, A: DurableAction>(
        _ action: A, of workflow: W, at rootPath: NodePath, time: WallTime, configuration: DurableConfiguration,
        store: String, instance: String
    ) throws -> (LogEntry, RecordedForms) where A.WorkflowType == W, W.Rendering: Sendable, W.Output: Sendable {
        let codec = configuration.codec
        let payload: [UInt8]
        var version = A.version
        do {
            if let written = configuration.writtenActionVersions[A.tag], written != A.version,
               let encode = configuration.actions.encoder(tag: A.tag, version: written) {
                payload = try encode(action, codec)
                version = written
            } else {
                payload = try codec.encode(action)
            }
        } catch {
            throw DurableError(.notCodable, store: store, instance: instance, sequence: 2, actionTag: A.tag, nodePath: rootPath.description,
                               detail: "the first action could not be encoded: \(error)")
        }
        var digest: UInt64?
        var forms = RecordedForms()
        let result = DigestResult()
        if case .every(let interval) = configuration.digests, interval > 0, 2 % UInt64(interval) == 0 {
            // The state after the action, from a tree that only replays it (nothing is released).
            let digests = StateDigests(codec: codec, store: store, instance: instance)
            try WorkflowHost<W>.inspect(
                workflow: workflow, configuration: configuration.host, restorer: nil, versions: configuration.newInstanceVersions(),
                initialSequence: 1, pathNaming: configuration.pathNaming, replay: { driver in try driver.apply(action, at: rootPath, origin: .sink, time: time, sequence: 2) },
                inspect: { tree in
                    result.value = Result { try digests.digest(of: tree) }
                    result.forms = RecordedForms().changes(in: tree)
                    result.workers = InstanceJournal.declaredWorkers(of: tree)
                })
            digest = try result.value?.get()
            forms.learn(result.forms)
        }
        let entry = LogEntry(sequence: 2, time: time, origin: .sink, nodePath: rootPath, actionTag: A.tag, actionVersion: version,
                             payload: payload, digest: digest,
                             notes: EntryNotes(stateVersions: forms.versions, declaredWorkers: result.workers ?? [:],
                                               declaresAllWorkers: result.workers != nil))
        return (entry, forms)
    }
}

/// What ``WorkflowStore/resumeAll(_:configuration:)`` made of one instance.
public struct ResumeResult<W: Workflow & Sendable>: Sendable where W.Rendering: Sendable, W.Output: Sendable {
    /// The instance's id.
    public let id: String
    /// Its running host, or why it could not be resumed.
    public let outcome: Result<WorkflowHost<W>, DurableError>

    /// The running host, if the instance was resumed.
    public var host: WorkflowHost<W>? { try? outcome.get() }
    /// Why it could not be resumed, if it could not.
    public var error: DurableError? {
        if case .failure(let error) = outcome { return error }
        return nil
    }
}

/// The digest an inspection computed (set once, on the calling thread).
private final class DigestResult {
    var value: Result<UInt64, any Error>?
    /// The state forms of the tree it was computed over, where not of version 1.
    var forms: [String: Int] = [:]
    /// The workers that tree declares.
    var workers: [String: Int]?
}

extension DurableConfiguration {
    /// Why actions of `type` cannot be logged by a host with this configuration, or `nil`.
    func refusal(of type: any WorkflowAction.Type, store: String, instance: String) -> DurableError? {
        guard let durable = type as? any DurableAction.Type else {
            return DurableError(
                .actionNotDurable, store: store, instance: instance,
                detail: "\(type) was sent to a durable host but is not a DurableAction, so it cannot be logged",
                recovery: "Make the action Codable, conform it to DurableAction and register it in DurableConfiguration.actions")
        }
        if let written = writtenActionVersions[durable.tag], written != durable.version,
           actions.encoder(tag: durable.tag, version: written) == nil || !actions.knows(tag: durable.tag, version: written) {
            return DurableError(
                .actionNotRegistered, store: store, instance: instance, actionTag: durable.tag,
                detail: "the configuration writes version \(written) of \(durable.tag), and no encoder (or decoder) is registered for it",
                recovery: "Register both: ActionRegistry.register(\(type).self, version: \(written), decode:encode:)")
        }
        guard actions.knows(tag: durable.tag, version: durable.version) else {
            let registration = (durable as? any TaskEventAction.Type)?.registration ?? "register(\(type).self)"
            return DurableError(
                .actionNotRegistered, store: store, instance: instance, actionTag: durable.tag,
                detail: "no decoder is registered for \(type) (tag \"\(durable.tag)\", version \(durable.version)), so a restart could not replay it",
                recovery: "Register it: DurableConfiguration.actions.\(registration)")
        }
        return nil
    }
}

extension DurableError.Kind {
    /// Whether the error says the instance's log cannot be replayed as it stands (as opposed to
    /// the instance being busy elsewhere or the store failing).
    var meansTheLogCannotBeReplayed: Bool {
        switch self {
        case .unknownActionType, .undecodablePayload, .corruptEntry, .nonDeterministic, .replayMismatch, .notCodable, .payloadMismatch,
             .snapshotUndecodable:
            true
        default:
            false
        }
    }
}
