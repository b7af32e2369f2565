import WorkflowMemory
import Workflow

/// Computes the digest of rule D4 for one instance: every node's path and encoded state, hashed in
/// path order. Made once per journal or replay, so that a digest copies nothing per call (no
/// codec or names carried by value into each digest). Not thread-safe: used on the thread running the host or the replay.
final class StateDigests {
    private let encoders: EncoderCache
    private let codec: any PayloadCodec
    private let store: String
    private let instance: String?

    init(codec: any PayloadCodec, store: String, instance: String?) {
        self.codec = codec
        self.store = store
        self.instance = instance
        self.encoders = EncoderCache(codec: codec)
    }

    /// A node of the tree last digested: where its state lies and how it is encoded.
    private struct KnownNode {
        let path: String
        let encoding: any ValueEncoding.Type
        let state: NodeStateCell
    }

    /// The nodes of the tree whose `structureVersion` is `knownVersion`, in path order.
    @exclusivity(unchecked) private var knownNodes: [KnownNode] = []
    @exclusivity(unchecked) private var knownVersion: UInt64?
    /// The hash after the first node's path, which is the same for every digest of that tree.
    @exclusivity(unchecked) private var afterFirstPath = FNV1a64()

    /// The digest of `tree`'s states now; a `.notCodable` error names a node whose state cannot
    /// be encoded.
    func digest(of tree: any RuntimeTree) throws -> UInt64 {
        if tree.structureVersion != knownVersion, !learnNodes(of: tree) {
            // A state type seen for the first time: found (and checked) through its static type.
            var visitor = Visitor(digests: self)
            try tree.visitNodeStates(&visitor)
            _ = learnNodes(of: tree)
            return visitor.hash.value
        }
        // The same nodes as last time: each state is encoded where it lies, no call per node
        // (and the nodes are read in place: copying each out retained its path).
        var hash = afterFirstPath
        try knownNodes.withUnsafeBufferPointer { nodes in
            for index in nodes.indices {
                if index > 0 { hash.combine(nodes[index].path) }
                try nodes[index].state.withUnsafeAddress { state in
                    try combine(state: state, encoding: nodes[index].encoding, path: nodes[index].path, into: &hash)
                }
            }
        }
        return hash.value
    }

    /// The digest `tree` would have been given by a build whose state forms were `recorded`
    /// (workflow name to version; 1 when absent): each ``VersionedState`` of another version
    /// hashed in that version's form (rule V2). `nil` when a state's form cannot be taken back
    /// there (a field removed, a form changed, or a form newer than this build's): the recorded
    /// digest cannot be compared. Slow (every state is encoded and re-read): replay uses it only
    /// for entries recorded under other forms than this build's.
    func digest(of tree: any RuntimeTree, recordedForms recorded: [String: Int]) throws -> UInt64? {
        var visitor = FormVisitor(codec: codec, recorded: recorded, store: store, instance: instance)
        try tree.visitNodeStates(&visitor)
        return visitor.comparable ? visitor.hash.value : nil
    }

    /// Hashes each node's path and state in the form its recorded version had.
    private struct FormVisitor: NodeStateVisitor {
        var hash = FNV1a64()
        var comparable = true
        let codec: any PayloadCodec
        let recorded: [String: Int]
        let store: String
        let instance: String?

        init(codec: any PayloadCodec, recorded: [String: Int], store: String, instance: String?) {
            self.codec = codec
            self.recorded = recorded
            self.store = store
            self.instance = instance
        }

        mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws {
            hash.combine(pathDescription)
            var bytes = try StateCoding.encode(state, codec: codec, what: pathDescription, store: store, instance: instance)
            let version = path.segments.last.flatMap { recorded[$0.workflowType] } ?? 1
            if version != StateForms.version(of: State.self) {
                guard let versioned = State.self as? any VersionedState.Type,
                      let form = StateForms.recordedForm(of: bytes, type: versioned, recorded: version, codec: codec) else {
                    comparable = false
                    return
                }
                bytes = form
            }
            hash.combine(bytes)
        }
    }

    /// Keeps where `tree`'s states lie and their encoders; `false` (and nothing kept) when a state
    /// type has no encoder yet.
    private func learnNodes(of tree: any RuntimeTree) -> Bool {
        knownVersion = nil
        knownNodes.removeAll(keepingCapacity: true)
        for (path, state) in tree.nodeStateCells() {
            guard let encoding = encoders.knownStateEncoder(state.type) else {
                knownNodes.removeAll()
                return false
            }
            knownNodes.append(KnownNode(path: path, encoding: encoding, state: state))
        }
        afterFirstPath = FNV1a64()
        if let first = knownNodes.first { afterFirstPath.combine(first.path) }
        knownVersion = tree.structureVersion
        return true
    }

    /// Hashes one node, finding its state type's encoder.
    fileprivate func combine<State>(path pathDescription: String, state: State, into hash: inout FNV1a64) throws {
        let found: (any ValueEncoding.Type)?
        do {
            found = try encoders.stateEncoder(for: state)
        } catch {
            throw DurableError(.payloadMismatch, store: store, instance: instance, nodePath: pathDescription,
                               detail: error.description, recovery: BinaryPayloadMismatch.recovery)
        }
        guard let encoding = found else {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "\(State.self) is not Encodable",
                               recovery: "Make every durable workflow's State (and the root workflow) Codable")
        }
        hash.combine(pathDescription)
        try withUnsafePointer(to: state) { try combine(state: UnsafeRawPointer($0), encoding: encoding, path: pathDescription, into: &hash) }
    }

    /// Hashes a state's bytes.
    private func combine(state: UnsafeRawPointer, encoding: any ValueEncoding.Type, path pathDescription: String, into hash: inout FNV1a64) throws {
        if encoding.hashEncoding(state, into: &hash) { return }
        do {
            // Encoded after what earlier states left (emptying the buffer every time would cost
            // more than hashing a small state); emptied once it grows.
            if encoders.scratch.count > 4096 { encoders.scratch.removeAll(keepingCapacity: true) }
            let start = encoders.scratch.count
            try encoding.encode(state, codec: codec, into: &encoders.scratch)
            encoders.scratch.withUnsafeBytes { hash.combine(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        } catch {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "the state could not be encoded: \(error)")
        }
    }

    /// The running hash and the digests it works for: one word to copy besides the hash.
    private struct Visitor: NodeStateVisitor {
        var hash = FNV1a64()
        // Owner: `digest` makes this visitor on the stack and drops it before returning.
        unowned(unsafe) let digests: StateDigests

        init(digests: StateDigests) { self.digests = digests }

        mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws {
            try digests.combine(path: pathDescription, state: state, into: &hash)
        }
    }
}
