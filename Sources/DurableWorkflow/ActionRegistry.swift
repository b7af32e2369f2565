import Workflow

/// The action types a store can decode, by tag and version (rule D8).
///
/// Register every ``DurableAction`` your durable workflows use; register decoders for the old
/// versions of actions whose encoding changed. A log entry with an unknown tag or version stops
/// replay of that instance with ``DurableError/Kind/unknownActionType``, and loses nothing.
public struct ActionRegistry: Sendable {
    struct Key: Hashable {
        let tag: String
        let version: Int
    }

    /// Decoders read the payload where it lies (during replay, in the LMDB map).
    typealias Decoder = @Sendable (UnsafeRawBufferPointer, any PayloadCodec) throws -> any DurableAction

    private(set) var decoders: [Key: Decoder] = [:]

    /// An empty registry.
    public init() {}

    /// A registry with `types` registered.
    public init(_ types: any DurableAction.Type...) {
        for type in types { register(type) }
    }

    /// Registers the current version of `type`.
    public mutating func register(_ type: any DurableAction.Type) {
        func open<A: DurableAction>(_ concrete: A.Type) { registerCurrent(concrete) }
        open(type)
    }

    private mutating func registerCurrent<A: DurableAction>(_ type: A.Type) {
        decoders[Key(tag: A.tag, version: A.version)] = { bytes, codec in try codec.decode(A.self, fromBuffer: bytes) }
    }

    /// Registers a decoder for `version` of the action tagged `A.tag`, which turns an old
    /// encoding into today's action.
    public mutating func register<A: DurableAction>(
        _ type: A.Type, version: Int, decode: @escaping @Sendable ([UInt8], any PayloadCodec) throws -> A
    ) {
        decoders[Key(tag: A.tag, version: version)] = { bytes, codec in try decode(Array(bytes), codec) }
    }

    /// Whether `tag` at `version` can be decoded.
    public func knows(tag: String, version: Int) -> Bool { decoders[Key(tag: tag, version: version)] != nil }

    func decoder(tag: String, version: Int) -> Decoder? {
        decoders[Key(tag: tag, version: version)]
    }
}
