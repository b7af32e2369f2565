import Workflow

/// Hands a snapshot's states to the nodes a resume creates, and notes what did not fit: a
/// recorded state that does not decode as its node's state type, or one no node took (render now
/// declares other children). Used only during the resume's first render pass, on its thread.
final class SnapshotRestorer: StateRestorer {
    let snapshot: Snapshot
    let codec: any PayloadCodec
    /// The paths whose recorded state a node took.
    private var restored: Set<NodePath> = []
    /// The first recorded state that did not decode.
    private var undecodable: SnapshotMismatch.Cause?

    init(snapshot: Snapshot, codec: any PayloadCodec) {
        self.snapshot = snapshot
        self.codec = codec
    }

    func restoredState<State>(at path: NodePath, as type: State.Type) -> State? {
        guard let bytes = snapshot.states[path] else { return nil }
        do {
            let state = try StateForms.decode(type, from: bytes, storedVersion: snapshot.storedVersion(at: path), codec: codec)
            restored.insert(path)
            return state
        } catch {
            if undecodable == nil { undecodable = .undecodable(path: path, type: String(reflecting: type), error: ReplayExplanation.decoding(error)) }
            return nil
        }
    }

    func restoredWorkerStart(at path: NodePath, key: String) -> UInt64? {
        snapshot.workerStarts[Snapshot.workerKey(path, key)]
    }

    /// Why the tree built from the snapshot is not the tree it recorded, or `nil` when it is.
    /// Asked once the first render pass is over.
    func mismatch() -> SnapshotMismatch? {
        if let undecodable { return SnapshotMismatch(sequence: snapshot.sequence, cause: undecodable) }
        let unclaimed = snapshot.states.keys.filter { !restored.contains($0) }
        guard !unclaimed.isEmpty else { return nil }
        return SnapshotMismatch(sequence: snapshot.sequence, cause: .unclaimed(unclaimed.sorted { $0.description < $1.description }))
    }
}
