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

    /// How one tag and version is decoded: through `Codable`, and for a current
    /// `BinaryPayloadRepresentable` type also by the type itself.
    struct Decoders: Sendable {
        let codable: Decoder
        let own: Decoder?
    }

    private(set) var decoders: [Key: Decoders] = [:]

    /// Writes an action in an older version's form (rule V1's rollback phase).
    typealias Encoder = @Sendable (any DurableAction, any PayloadCodec) throws -> [UInt8]

    /// The encoders of older versions, for builds that still write them.
    private(set) var encoders: [Key: Encoder] = [:]

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
        func own<R: DurableAction & BinaryPayloadRepresentable>(_ type: R.Type) -> Decoder {
            // Bytes the type does not read (an older form of it, say) go through `Codable`.
            { bytes, codec in
                do { return try BinaryPayloadReader.read(R.self, from: bytes) } catch { return try codec.decode(R.self, fromBuffer: bytes) }
            }
        }
        decoders[Key(tag: A.tag, version: A.version)] = Decoders(
            codable: { bytes, codec in try codec.decode(A.self, fromBuffer: bytes) },
            own: (A.self as? any (DurableAction & BinaryPayloadRepresentable).Type).map { own($0) })
    }

    /// Registers `type` (its current version) under a tag it was logged with before its tag
    /// changed (a type renamed or moved to another module, whose tag was its module-qualified
    /// name): entries of `formerTag` are read as `type`; new entries are written under `A.tag`.
    public mutating func register<A: DurableAction>(_ type: A.Type, formerTag: String) {
        registerCurrent(type)
        decoders[Key(tag: formerTag, version: A.version)] = decoders[Key(tag: A.tag, version: A.version)]
    }

    /// Registers a decoder for `version` of the action tagged `A.tag`, which turns an old
    /// encoding into today's action.
    public mutating func register<A: DurableAction>(
        _ type: A.Type, version: Int, decode: @escaping @Sendable ([UInt8], any PayloadCodec) throws -> A
    ) {
        decoders[Key(tag: A.tag, version: version)] = Decoders(codable: { bytes, codec in try decode(Array(bytes), codec) }, own: nil)
    }

    /// Registers how `version` of the action tagged `A.tag` is read (`decode`, from an old
    /// encoding to today's action) and written (`encode`, today's action in that version's form):
    /// a build that reads the new version but still writes this one
    /// (``DurableConfiguration/writtenActionVersions``) can be rolled back to the build before it.
    public mutating func register<A: DurableAction>(
        _ type: A.Type, version: Int, decode: @escaping @Sendable ([UInt8], any PayloadCodec) throws -> A,
        encode: @escaping @Sendable (A, any PayloadCodec) throws -> [UInt8]
    ) {
        register(type, version: version, decode: decode)
        encoders[Key(tag: A.tag, version: version)] = { action, codec in
            guard let action = action as? A else { throw ActionEncodingMismatch(tag: A.tag, version: version) }
            return try encode(action, codec)
        }
    }

    /// The encoder of `version` of `tag`, if one is registered.
    func encoder(tag: String, version: Int) -> Encoder? { encoders[Key(tag: tag, version: version)] }

    /// Whether `tag` at `version` can be decoded.
    public func knows(tag: String, version: Int) -> Bool { decoders[Key(tag: tag, version: version)] != nil }

    /// The decoder of `tag` at `version`; with `ownBytes` (the instance's codec is
    /// `BinaryPayloadCodec`), the type's own when it has one.
    func decoder(tag: String, version: Int, ownBytes: Bool) -> Decoder? {
        guard let found = decoders[Key(tag: tag, version: version)] else { return nil }
        return ownBytes ? found.own ?? found.codable : found.codable
    }
}

/// An encoder registered for a tag got an action of another type.
struct ActionEncodingMismatch: Error, CustomStringConvertible {
    let tag: String
    let version: Int
    var description: String { "the encoder registered for version \(version) of \(tag) got an action of another type" }
}
