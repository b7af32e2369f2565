import Workflow

/// Encoders for values whose types are known only at run time (actions, node states), looked up
/// once per type: casting a value to `DurableAction` or `Encodable` is a conformance lookup that
/// costs more than encoding a small value, so each type is cast once and its encoder kept. Not thread-safe: each journal and
/// each replay has its own.
final class EncoderCache {
    /// A buffer the cache's user encodes into and reads before the next encoding (digests).
    @exclusivity(unchecked) var scratch: [UInt8] = []

    /// How to log one action type: found once, shared by its entries in a batch. A class: handing
    /// out a struct holding the tag copied and destroyed it through an outlined optional.
    final class ActionEncoder {
        let tag: String
        let version: Int
        let encoding: any ValueEncoding.Type

        init(tag: String, version: Int, encoding: any ValueEncoding.Type) {
            self.tag = tag
            self.version = version
            self.encoding = encoding
        }
    }

    @exclusivity(unchecked) private var actions = PerType<ActionEncoder>()
    @exclusivity(unchecked) private var states = PerType<any ValueEncoding.Type>()
    /// Whether `BinaryPayloadRepresentable` types write their own bytes (the codec is
    /// `BinaryPayloadCodec`); otherwise every type goes through `Codable`.
    private let ownBytes: Bool

    init(codec: any PayloadCodec) {
        ownBytes = codec is BinaryPayloadCodec
    }

    /// The encoder of `action`'s type; `nil` when it is not a ``DurableAction``. A type that writes
    /// its own bytes is checked on its first value (a mismatch is thrown, and the check repeats).
    func actionEncoder<A>(for action: A) throws(BinaryPayloadMismatch) -> ActionEncoder? {
        try actions.value(for: ObjectIdentifier(A.self)) { () throws(BinaryPayloadMismatch) in
            guard let durable = A.self as? any DurableAction.Type else { return nil }
            return ActionEncoder(tag: durable.tag, version: durable.version, encoding: try encoding(of: action, as: durable))
        }
    }

    /// The encoder of `value`'s type; `nil` when it is not `Encodable`. Checked as actions are.
    func stateEncoder<T>(for value: T) throws(BinaryPayloadMismatch) -> (any ValueEncoding.Type)? {
        try states.value(for: ObjectIdentifier(T.self)) { () throws(BinaryPayloadMismatch) in
            guard let encodable = T.self as? any Encodable.Type else { return nil }
            return try encoding(of: value, as: encodable)
        }
    }

    /// The encoder of the state type `type` if ``stateEncoder(for:)`` found one before; `nil` for
    /// a type not seen yet or not `Encodable`.
    func knownStateEncoder(_ type: ObjectIdentifier) -> (any ValueEncoding.Type)? {
        states.known(type)
    }

    /// How values of `value`'s type are encoded, after checking a type that writes its own bytes.
    private func encoding<T>(of value: T, as type: any Encodable.Type) throws(BinaryPayloadMismatch) -> any ValueEncoding.Type {
        if ownBytes, let own = value as? any BinaryPayloadRepresentable {
            return try Self.checkedOwnEncoding(own)
        }
        if ownBytes, T.self == Int.self { return IntEncoding.self }
        if ownBytes, BinaryEncoding.isPrimitive(T.self) { return PrimitiveEncoding<T>.self }
        func open<E: Encodable>(_ type: E.Type) -> any ValueEncoding.Type { TypedEncoding<E>.self }
        return open(type)
    }

    private static func checkedOwnEncoding<R: BinaryPayloadRepresentable>(_ value: R) throws(BinaryPayloadMismatch) -> any ValueEncoding.Type {
        try BinaryPayloadCodec().checkOwnEncoding(of: value)
        return OwnEncoding<R>.self
    }
}

/// Appends the encoding of the value at a pointer to the type it was made for (an action or a
/// node's state): a static requirement of an empty generic type, held as a metatype, which has no
/// reference count and is copied as two words: a closure's context would be retained on the
/// host's thread and released on the writer's for every entry (one cache line shared by two
/// threads), and an existential of an empty struct needs witness calls to copy and destroy.
protocol ValueEncoding: Sendable {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws
    /// Hashes the bytes `encode` would append, without making them, when that is cheaper (a
    /// small fixed form); `false`, having hashed nothing, otherwise.
    static func hashEncoding(_ pointer: UnsafeRawPointer, into hash: inout FNV1a64) -> Bool
}

extension ValueEncoding {
    static func hashEncoding(_ pointer: UnsafeRawPointer, into hash: inout FNV1a64) -> Bool { false }
}

private enum TypedEncoding<E: Encodable>: ValueEncoding {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws {
        try codec.encode(pointer.assumingMemoryBound(to: E.self).pointee, appendingTo: &bytes)
    }
}

/// Appends the marker and the bytes a `BinaryPayloadRepresentable` writes itself (equal to its
/// `Codable` encoding by `BinaryPayloadCodec`, checked before this is used).
private enum OwnEncoding<R: BinaryPayloadRepresentable>: ValueEncoding {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws {
        BinaryPayloadWriter.append(pointer.assumingMemoryBound(to: R.self).pointee, to: &bytes)
    }
}

/// Appends the marker and a primitive value's bytes: what `BinaryPayloadCodec` writes for it,
/// without the trip through the codec and its pool of encoders (an `Int` state is common).
private enum PrimitiveEncoding<T>: ValueEncoding {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws {
        bytes.append(BinaryPayloadCodec.marker)
        _ = BinaryEncoding.writePrimitive(pointer.assumingMemoryBound(to: T.self).pointee, to: &bytes)
    }
}

/// `PrimitiveEncoding<Int>` without the generic value's trip through value witnesses (an `Int`
/// state is the most common of all).
private enum IntEncoding: ValueEncoding {
    static func encode(_ pointer: UnsafeRawPointer, codec: any PayloadCodec, into bytes: inout [UInt8]) throws {
        bytes.append(BinaryPayloadCodec.marker)
        BinaryEncoding.writeInt(Int64(pointer.load(as: Int.self)), to: &bytes)
    }

    static func hashEncoding(_ pointer: UnsafeRawPointer, into hash: inout FNV1a64) -> Bool {
        // The same bytes as `encode`, made on the stack: no array to append to.
        var buffer: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &buffer) { raw in
            raw[0] = BinaryPayloadCodec.marker
            raw[1] = BinaryTag.int.rawValue
            let value = Int64(pointer.load(as: Int.self))
            let count = 2 + BinaryEncoding.storeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), at: raw.baseAddress! + 2)
            hash.combine(UnsafeRawBufferPointer(rebasing: raw[..<count]))
        }
        return true
    }
}

/// What was found for each type, the type seen last checked before the dictionary: a host mostly
/// logs one action type and digests one state type in a row. Keyed by `ObjectIdentifier` rather
/// than generic over the type: a method generic over both the type and `Value` is not
/// specialised, and looked up `Optional<Value>`'s metadata on every call.
private struct PerType<Value> {
    private var found: [ObjectIdentifier: Value?] = [:]
    private var lastType: ObjectIdentifier?
    private var last: Value?

    /// What was found for `id` before (`nil` when nothing was, or `nil` was).
    mutating func known(_ id: ObjectIdentifier) -> Value? {
        if id == lastType { return last }
        guard let cached = found[id] else { return nil }
        lastType = id
        last = cached
        return cached
    }

    mutating func value<Failure: Error>(for id: ObjectIdentifier, _ make: () throws(Failure) -> Value?) throws(Failure) -> Value? {
        if id == lastType { return last }
        let value: Value?
        if let cached = found[id] {
            value = cached
        } else {
            value = try make()
            found[id] = value
        }
        lastType = id
        last = value
        return value
    }
}
