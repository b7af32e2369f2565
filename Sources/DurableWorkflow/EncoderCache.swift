import Workflow

/// Encoders for values whose types are known only at run time (actions, node states), looked up
/// once per type: casting a value to `DurableAction` or `Encodable` cost more than encoding a
/// small one, so each type is cast once and its encoder kept. Not thread-safe: each journal and
/// each replay has its own.
final class EncoderCache {
    /// Encodes the value at a pointer to the type it was made for.
    typealias Encode = (UnsafeRawPointer, any PayloadCodec) throws -> [UInt8]

    /// How to log one action type.
    struct ActionEncoder {
        let tag: String
        let version: Int
        let encode: Encode
    }

    private var actions: [ObjectIdentifier: ActionEncoder?] = [:]
    private var states: [ObjectIdentifier: Encode?] = [:]
    // The type seen last, checked before the dictionary: a host mostly logs one action type
    // and digests one state type in a row.
    private var lastActionType: ObjectIdentifier?
    private var lastAction: ActionEncoder?
    private var lastStateType: ObjectIdentifier?
    private var lastState: Encode?

    /// The encoder of action type `A`; `nil` when `A` is not a ``DurableAction``.
    func actionEncoder<A>(for type: A.Type) -> ActionEncoder? {
        let id = ObjectIdentifier(type)
        if id == lastActionType { return lastAction }
        let found: ActionEncoder?
        if let cached = actions[id] {
            found = cached
        } else {
            found = (type as? any DurableAction.Type).map { Self.actionEncoder(of: $0) }
            actions[id] = found
        }
        lastActionType = id
        lastAction = found
        return found
    }

    /// The encoder of values of type `T`; `nil` when `T` is not `Encodable`.
    func stateEncoder<T>(for type: T.Type) -> Encode? {
        let id = ObjectIdentifier(type)
        if id == lastStateType { return lastState }
        let found: Encode?
        if let cached = states[id] {
            found = cached
        } else {
            found = (type as? any Encodable.Type).map { Self.encoder(of: $0) }
            states[id] = found
        }
        lastStateType = id
        lastState = found
        return found
    }

    private static func actionEncoder<D: DurableAction>(of type: D.Type) -> ActionEncoder {
        ActionEncoder(tag: D.tag, version: D.version, encode: encoder(of: D.self))
    }

    private static func encoder<E: Encodable>(of type: E.Type) -> Encode {
        { pointer, codec in try codec.encode(pointer.assumingMemoryBound(to: E.self).pointee) }
    }
}

/// Hashes every node's path and encoded state, in path order: the digest of rule D4.
struct StateDigester: NodeStateVisitor {
    private(set) var hash = FNV1a64()
    let encoders: EncoderCache
    let codec: any PayloadCodec
    let store: String
    let instance: String?

    mutating func visit<State>(path: NodePath, pathDescription: String, state: State) throws {
        guard let encode = encoders.stateEncoder(for: State.self) else {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "\(State.self) is not Encodable",
                               recovery: "Make every durable workflow's State (and the root workflow) Codable")
        }
        hash.combine(pathDescription)
        do {
            hash.combine(try withUnsafePointer(to: state) { try encode(UnsafeRawPointer($0), codec) })
        } catch let error as DurableError {
            throw error
        } catch {
            throw DurableError(.notCodable, store: store, instance: instance, nodePath: pathDescription,
                               detail: "the state could not be encoded: \(error)")
        }
    }
}
