import WorkflowStorage

/// Every failure of the durable engine: what, where (store, instance, sequence) and what to do.
/// Match with `switch error.kind` or `catch DurableError.Kind.unknownActionType`.
public struct DurableError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The store was written by a newer version of this library.
        case newerFormat
        /// An instance with this id already exists.
        case instanceExists
        /// No instance has this id.
        case instanceNotFound
        /// The instance was started with another root workflow type.
        case wrongWorkflowType
        /// A log entry names an action type tag (and version) that no decoder is registered for.
        case unknownActionType
        /// A log entry's payload does not decode as its registered type.
        case undecodablePayload
        /// A log entry's bytes fail their checksum, or the log has a gap.
        case corruptEntry
        /// Replay produced a different state than the one recorded (a non-deterministic workflow).
        case nonDeterministic
        /// An action applied to a durable host is not a `DurableAction` (it cannot be logged).
        case actionNotDurable
        /// An action sent to a durable host has a type its configuration's ``ActionRegistry``
        /// cannot decode: it would be logged, then stop the instance's next resume. It was not
        /// applied, and the host goes on.
        case actionNotRegistered
        /// A node state or root workflow cannot be encoded or decoded (not `Codable`).
        case notCodable
        /// A logged entry targets a node that replay did not recreate.
        case replayMismatch
        /// A sequence number outside the instance's log.
        case sequenceOutOfRange
        /// Another live host (in this or another process) is running the instance.
        case instanceInUse
        /// The instance was cancelled or terminated (rule O2): it is not resumed.
        case instanceCancelled
        /// A control request (rule O2) was recorded, and the live host that runs the instance did
        /// not answer in time: the request stays recorded, for that host (or the instance's next
        /// one) to apply.
        case controlNotAnswered
        /// The configuration's codec is not the one the instance was written with.
        case codecMismatch
        /// A `BinaryPayloadRepresentable` type writes other bytes than `Codable` does for the same
        /// value, or cannot read its own bytes back.
        case payloadMismatch
        /// The underlying store failed (see `storageFailure`).
        case storage
        /// A signal version was handed to the instance a second time: the store refused the
        /// commit that would have applied it again (nothing of it was written; rule S7).
        case signalDeliveredTwice
        /// The instance's latest snapshot does not fit this build (a state that does not decode,
        /// or children render no longer declares), and its log cannot replace it (an entry before
        /// the snapshot is damaged or missing). The snapshot is never taken for the initial state.
        case snapshotUndecodable
        /// The instance fixed a version marker at a version this build no longer supports
        /// (`DurableConfiguration.versionMarkers`): its code for that version is gone, so it is
        /// not replayed. Nothing of it changed.
        case unsupportedVersion
        /// The instance started under a code version this build does not run
        /// (`DurableConfiguration.supportedCodeVersions`): it is left, unclaimed and unchanged, to
        /// a build that runs it.
        case unsupportedCodeVersion
    }

    /// What went wrong.
    public let kind: Kind
    /// The store's path.
    public let store: String
    /// The instance, when one is concerned.
    public let instance: String?
    /// The log sequence, when one is concerned.
    public let sequence: UInt64?
    /// The action type tag, when one is concerned.
    public let actionTag: String?
    /// The node path, when one is concerned.
    public let nodePath: String?
    /// A one-line explanation.
    public let detail: String
    /// What to do about it.
    public let recovery: String
    /// What the store underneath reported, for a `.storage` failure (and a damaged file behind a
    /// `.corruptEntry`); its `underlying` error is the backend's own.
    public let storageFailure: StorageFailure?

    package init(
        _ kind: Kind, store: String, instance: String? = nil, sequence: UInt64? = nil, actionTag: String? = nil,
        nodePath: String? = nil, detail: String, recovery: String = "", storageFailure: StorageFailure? = nil
    ) {
        self.kind = kind
        self.store = store
        self.instance = instance
        self.sequence = sequence
        self.actionTag = actionTag
        self.nodePath = nodePath
        self.detail = detail
        self.recovery = recovery
        self.storageFailure = storageFailure
    }

    /// `<detail> (store …, instance …, sequence …, action …, node …). <recovery>`
    public var description: String {
        var place = ["store \(store)"]
        if let instance { place.append("instance \(instance)") }
        if let sequence { place.append("sequence \(sequence)") }
        if let actionTag { place.append("action \(actionTag)") }
        if let nodePath { place.append("node \(nodePath)") }
        var text = "\(detail) (\(place.joined(separator: ", ")))"
        if !recovery.isEmpty { text += ". \(recovery)" }
        return text
    }

    package static func storage(_ failure: StorageFailure, store: String, instance: String? = nil) -> DurableError {
        DurableError(.storage, store: store, instance: instance, detail: failure.summary, recovery: failure.recovery, storageFailure: failure)
    }

    /// A failure to open the store at `location`: a newer format is ``Kind/newerFormat``.
    package static func opening(_ location: String, failure: StorageFailure) -> DurableError {
        if failure.kind == .newerFormat {
            return DurableError(.newerFormat, store: location, detail: failure.detail, recovery: failure.recovery, storageFailure: failure)
        }
        return DurableError(.storage, store: location, detail: failure.kind == .notAStore || failure.kind == .notFound ? failure.detail : failure.summary,
                            recovery: failure.recovery, storageFailure: failure)
    }
}

extension DurableError.Kind {
    /// Lets `catch DurableError.Kind.corruptEntry` match an error of that kind.
    public static func ~= (pattern: DurableError.Kind, value: any Error) -> Bool {
        (value as? DurableError)?.kind == pattern
    }
}

extension DurableError {
    /// This error of a replay of the whole log that ran because the snapshot at
    /// `mismatch.sequence` did not fit the build: ``Kind/snapshotUndecodable`` when the log
    /// cannot replace the snapshot (an entry at or before it is corrupt), else this error saying
    /// what became of the snapshot too.
    func replacingSnapshot(_ mismatch: SnapshotMismatch) -> DurableError {
        if kind == .corruptEntry, let sequence, sequence <= mismatch.sequence {
            return DurableError(
                .snapshotUndecodable, store: store, instance: instance, sequence: mismatch.sequence, nodePath: mismatch.nodePath,
                detail: "\(mismatch), and the log cannot replace it: \(detail) (entry \(sequence))",
                recovery: "Resume it with the build that wrote the snapshot (its code decodes it), or restore the store from a copy",
                storageFailure: storageFailure)
        }
        return DurableError(
            kind, store: store, instance: instance, sequence: self.sequence, actionTag: actionTag, nodePath: nodePath,
            detail: detail + "; replayed from the first entry because \(mismatch)", recovery: recovery, storageFailure: storageFailure)
    }
}
