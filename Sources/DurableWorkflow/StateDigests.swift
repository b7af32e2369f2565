import Workflow

/// Computes the digest of rule D4 for one instance: every node's path and encoded state, hashed in
/// path order. Made once per journal or replay, so that a digest copies nothing per call (a
/// digester carrying the codec and the names by value cost a tenth of a grouped action to build
/// and destroy). Not thread-safe: used on the thread running the host or the replay.
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

    /// The digest of `tree`'s states now; a `.notCodable` error names a node whose state cannot
    /// be encoded.
    func digest(of tree: any RuntimeTree) throws -> UInt64 {
        var visitor = Visitor(digests: self)
        try tree.visitNodeStates(&visitor)
        return visitor.hash.value
    }

    /// Hashes one node: its path, then its state's bytes.
    fileprivate func combine<State>(path pathDescription: String, state: State, into hash: inout FNV1a64) throws {
        let found: (any ValueEncoding.Type)?
        do {
            found = try encoders.stateEncoder(for: state)
        } catch {
            throw DurableError(.payloadMismatch, store: store, instance: instance, nodePath: pathDescription,
                               detail: error.description, recovery: BinaryPayloadMismatch.recovery)
        }
        guard let encoder = found else {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "\(State.self) is not Encodable",
                               recovery: "Make every durable workflow's State (and the root workflow) Codable")
        }
        hash.combine(pathDescription)
        do {
            // Encoded after what earlier states left (emptying the buffer every time cost more
            // than hashing a small state); emptied once it grows.
            if encoders.scratch.count > 4096 { encoders.scratch.removeAll(keepingCapacity: true) }
            let start = encoders.scratch.count
            try withUnsafePointer(to: state) { try encoder.encode(UnsafeRawPointer($0), codec: codec, into: &encoders.scratch) }
            encoders.scratch.withUnsafeBytes { hash.combine(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        } catch let error as DurableError {
            throw error
        } catch {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "the state could not be encoded: \(error)")
        }
    }

    /// The running hash and the digests it works for: one word to copy besides the hash.
    private struct Visitor: NodeStateVisitor {
        var hash = FNV1a64()
        unowned(unsafe) let digests: StateDigests

        init(digests: StateDigests) { self.digests = digests }

        mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws {
            try digests.combine(path: pathDescription, state: state, into: &hash)
        }
    }
}
