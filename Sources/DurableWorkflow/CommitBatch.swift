import Workflow

/// An entry recorded by the host and not yet committed. An action's payload is encoded when its
/// commit is written (on the committing thread for a group commit), so the host's thread only
/// records what was applied.
struct PendingEntry: Sendable {
    /// What the entry's payload is made from.
    enum Content: Sendable {
        /// An applied action and its type's encoder.
        case action(any WorkflowAction, EncoderCache.ActionEncode)
        /// An already encoded payload (root props).
        case payload([UInt8])
    }

    let sequence: UInt64
    let time: WallTime
    let origin: ActionOrigin
    let nodePath: NodePath
    let actionTag: String
    let actionVersion: Int
    let content: Content
    var digest: UInt64?

    /// Appends the entry's payload, encoded with `codec`, to `bytes`.
    func appendPayload(codec: any PayloadCodec, to bytes: inout [UInt8]) throws {
        switch content {
        case .payload(let payload): bytes.append(contentsOf: payload)
        case .action(let action, let encode): try Self.encode(action, with: encode, codec: codec, to: &bytes)
        }
    }

    private static func encode<A: WorkflowAction>(
        _ action: A, with encode: EncoderCache.ActionEncode, codec: any PayloadCodec, to bytes: inout [UInt8]
    ) throws {
        try withUnsafePointer(to: action) { try encode(UnsafeRawPointer($0), codec, &bytes) }
    }

    /// The log entry, with `payload`.
    func entry(payload: [UInt8]) -> LogEntry {
        LogEntry(
            sequence: sequence, time: time, origin: origin, nodePath: nodePath, actionTag: actionTag,
            actionVersion: actionVersion, payload: payload, digest: digest)
    }
}

/// What one commit writes for an instance: its entries in order, the snapshots taken at them, and
/// the writes attached to them (signal delivery marks).
struct CommitBatch: Sendable {
    var entries: [PendingEntry] = []
    var snapshots: [Snapshot] = []
    var attachments: [any CommitAttachment] = []

    var isEmpty: Bool { entries.isEmpty }

    /// An empty batch with room for `capacity` entries.
    init(capacity: Int = 0) {
        entries.reserveCapacity(capacity)
    }

    /// The attached writes will never be made.
    func abandon() {
        for attachment in attachments { attachment.didAbandon() }
    }
}
