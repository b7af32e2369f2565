import Foundation
import Synchronization

extension BinaryEncoding {
    /// Encodes `value` straight onto `out`, writing the same bytes as building its ``Item`` tree
    /// and writing that, without the tree: no object per container or nested value, no copy of
    /// each string. Returns `false`, with `out` as it was, when the value used its containers in
    /// an order a stream cannot follow (a super encoder; a container written to after a later
    /// sibling was; two kinds of container for one value) or asked for its coding path; the
    /// caller then builds the tree.
    static func stream<T: Encodable>(_ value: T, onto out: inout [UInt8], encoders: StreamEncoderPool) throws -> Bool {
        if writePrimitive(value, to: &out) { return true }
        let start = out.count
        let stream = encoders.take()
        defer { encoders.giveBack(stream) }
        swap(&stream.bytes, &out)
        defer { swap(&stream.bytes, &out) }
        do {
            try stream.encodeValue(value)
        } catch {
            stream.bytes.removeSubrange(start...)
            if stream.abandoned { return false }
            throw error
        }
        if stream.abandoned {
            // A value that caught the stream's own error and went on.
            stream.bytes.removeSubrange(start...)
            return false
        }
        return true
    }

    /// Writes `value` if it is one of the primitives written without running `encode(to:)`.
    @inline(__always)
    package static func writePrimitive<T>(_ value: T, to out: inout [UInt8]) -> Bool {
        if T.self == Int.self { writeInt(Int64(unsafeBitCast(value, to: Int.self)), to: &out) }
        else if T.self == String.self { writeTaggedString(unsafeBitCast(value, to: String.self), to: &out) }
        else if T.self == Bool.self { writeBool(unsafeBitCast(value, to: Bool.self), to: &out) }
        else if T.self == Double.self { writeDouble(unsafeBitCast(value, to: Double.self), to: &out) }
        else if T.self == Int64.self { writeInt(unsafeBitCast(value, to: Int64.self), to: &out) }
        else if T.self == UInt64.self { writeUInt(unsafeBitCast(value, to: UInt64.self), to: &out) }
        else if T.self == UInt8.self { writeUInt(UInt64(unsafeBitCast(value, to: UInt8.self)), to: &out) }
        else { return false }
        return true
    }

    /// Whether ``writePrimitive(_:to:)`` writes values of type `T`.
    package static func isPrimitive<T>(_ type: T.Type) -> Bool {
        T.self == Int.self || T.self == String.self || T.self == Bool.self || T.self == Double.self
            || T.self == Int64.self || T.self == UInt64.self || T.self == UInt8.self
    }

    static func writeBool(_ value: Bool, to out: inout [UInt8]) {
        out.append(value ? BinaryTag.true.rawValue : BinaryTag.false.rawValue)
    }

    package static func writeInt(_ value: Int64, to out: inout [UInt8]) {
        out.append(BinaryTag.int.rawValue)
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &out)
    }

    static func writeUInt(_ value: UInt64, to out: inout [UInt8]) {
        out.append(BinaryTag.uint.rawValue)
        writeVarint(value, to: &out)
    }

    static func writeDouble(_ value: Double, to out: inout [UInt8]) {
        out.append(BinaryTag.double.rawValue)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) }
    }

    static func writeTaggedString(_ value: String, to out: inout [UInt8]) {
        out.append(BinaryTag.string.rawValue)
        writeString(value, to: &out)
    }

    /// Stream encoders kept for the next encoding: an encoder and its buffers cost more to
    /// allocate and free than a small value costs to encode. Two slots, because a durable host
    /// encodes on two threads at once (states for digests on the host's, payloads on the
    /// writer's); each is taken and given back with one atomic exchange, cheaper than a lock
    /// around a list.
    final class StreamEncoderPool: Sendable {
        private let first = Atomic<Unmanaged<StreamEncoder>?>(nil)
        private let second = Atomic<Unmanaged<StreamEncoder>?>(nil)
        /// Whether its encoders keep keyed containers for reuse (``StreamEncoder/container(keyedBy:)``).
        let reusesKeyedContainers: Bool

        /// A pool whose encoders keep keyed containers when `reusingKeyedContainers` and the
        /// standard library's layout allows it (``StreamEncoder/containerIsItsBox``).
        init(reusingKeyedContainers: Bool = BinaryEncoding.reusesKeyedContainersByDefault) {
            reusesKeyedContainers = reusingKeyedContainers && StreamEncoder.containerIsItsBox
        }

        func take() -> StreamEncoder {
            if let kept = first.exchange(nil, ordering: .acquiring) ?? second.exchange(nil, ordering: .acquiring) {
                return kept.takeRetainedValue()
            }
            return StreamEncoder(reusingKeyedContainers: reusesKeyedContainers)
        }

        func giveBack(_ encoder: StreamEncoder) {
            encoder.reset()
            let kept = Unmanaged.passRetained(encoder)
            if first.compareExchange(expected: nil, desired: kept, ordering: .releasing).exchanged { return }
            if second.compareExchange(expected: nil, desired: kept, ordering: .releasing).exchanged { return }
            encoder.forgetContainers()
            kept.release()
        }

        deinit {
            Self.drop(first.load(ordering: .acquiring))
            Self.drop(second.load(ordering: .acquiring))
        }

        private static func drop(_ kept: Unmanaged<StreamEncoder>?) {
            guard let kept else { return }
            kept.takeUnretainedValue().forgetContainers()
            kept.release()
        }
    }

    /// Whether stream encoders keep keyed containers for reuse, unless told otherwise: yes,
    /// unless the environment variable `WORKFLOW_CODEC_REUSE_CONTAINERS` is `0` (the switch that
    /// leaves the standard library's container layout alone; the bytes written are the same).
    static let reusesKeyedContainersByDefault = ProcessInfo.processInfo.environment["WORKFLOW_CODEC_REUSE_CONTAINERS"] != "0"

    /// The stream gave up on this value (see ``StreamEncoder/abandon()``).
    struct StreamAbandoned: Error {}

    /// An `Encoder` that writes each value where it is encoded. Containers are frames on a stack:
    /// a value's frame is finished when its `encode(to:)` returns, a nested container's when its
    /// parent is written to again. A map's entries are written as they come, then put in key
    /// order (the last value of a repeated key wins) and counted when its frame is finished; an
    /// array's count is put in front of its elements then.
    ///
    /// Used by one encoding on one thread, so its storage skips dynamic exclusivity checks, which
    /// would cost more than the small writes they guard.
    // @unchecked Sendable, only so a ``StreamEncoderPool`` can keep it between encodings: an
    // encoder is reachable only from the pool (in one of its atomic slots) or from the one `stream` call
    // that took it, which uses it on its own thread and gives it back when done; the containers it
    // hands out are used only during that call (`Encodable` values may not keep them), and those
    // it keeps for reuse are reachable only through the encoder itself. So no two
    // threads ever touch one at once, and a hand-over goes through a slot's releasing store and
    // acquiring exchange, which order the encoder's writes before the next user's reads.
    final class StreamEncoder: Encoder, @unchecked Sendable {
        /// The output; the caller's buffer is swapped in and out.
        @exclusivity(unchecked) var bytes: [UInt8] = []
        /// Set when the stream cannot follow the value; everything it wrote is discarded.
        @exclusivity(unchecked) private(set) var abandoned = false
        @exclusivity(unchecked) private var frames: [Frame] = []
        /// The entries of the open maps, innermost last: each key and where its entry starts.
        @exclusivity(unchecked) private var entries: [(key: String, start: Int)] = []
        @exclusivity(unchecked) private var nextFrameID = 0
        @exclusivity(unchecked) private var scratch: [UInt8] = []
        /// The keyed container last handed out for each of the first frames, kept for the next
        /// value of the same type in the same frame (see ``container(keyedBy:)``). Each holds
        /// this encoder, so ``forgetContainers()`` must run before the encoder is dropped.
        @exclusivity(unchecked) private var keyedContainers: [KeptContainer] = []
        /// The type of the last value found to encode in a defined order (not a collection that
        /// may encode in hash order).
        private var lastInOrderType: ObjectIdentifier?
        /// Whether keyed containers are kept at all (the pool's choice, true only where
        /// ``containerIsItsBox``).
        let reusesKeyedContainers: Bool

        init(reusingKeyedContainers: Bool) {
            reusesKeyedContainers = reusingKeyedContainers
        }

        struct Frame {
            enum Kind { case pending, keyed, unkeyed, single }
            var kind: Kind
            let id: Int
            /// Where the value's type byte is (or will be).
            let start: Int
            /// A value's own frame; `false` for a nested container.
            let isValue: Bool
            /// The frame's first entry in `entries` (maps).
            let firstEntry: Int
            /// Elements written (arrays), or 1 once a single value is written.
            var count = 0
        }

        /// A keyed container's box (the one reference a `KeyedEncodingContainer` holds) and the
        /// `CodingKey` type it was made for; `nil` for a frame id with no container kept yet.
        struct KeptContainer {
            var keyType: ObjectIdentifier
            var box: AnyObject?

            /// Matches no key type a value can use.
            static var none: KeptContainer { KeptContainer(keyType: ObjectIdentifier(NoKey.self), box: nil) }
            private enum NoKey {}
        }

        /// Frames below this id keep their keyed container.
        static let keptFrames = 8

        /// Not tracked: keeping each frame's key would add to every value's encoding, and few
        /// values ask. A value that asks is handed to the tree, which knows its path (the
        /// stream's bytes are discarded, so the answer given here is never used).
        var codingPath: [any CodingKey] {
            _ = abandon()
            return []
        }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func abandon() -> StreamAbandoned {
            abandoned = true
            return StreamAbandoned()
        }

        // MARK: Values

        func encodeValue<T: Encodable>(_ value: T) throws {
            if BinaryEncoding.writePrimitive(value, to: &bytes) { return }
            // Elements in hash order: the tree puts them in canonical order. Asked once for a run
            // of values of one type (a conformance lookup per value would cost more than most
            // small values' encoding).
            let type = ObjectIdentifier(T.self)
            if type != lastInOrderType {
                if let unordered = T.self as? any UnorderedCollection.Type, unordered.mayEncodeInHashOrder { throw abandon() }
                lastInOrderType = type
            }
            let id = nextFrameID
            nextFrameID += 1
            frames.append(Frame(kind: .pending, id: id, start: bytes.count, isValue: true, firstEntry: entries.count))
            try value.encode(to: self)
            guard !abandoned, let index = frames.lastIndex(where: { $0.id == id }) else { throw abandon() }
            while frames.count > index { finishTop() }
        }

        func writeNil() { bytes.append(BinaryTag.null.rawValue) }
        func writeBool(_ value: Bool) { BinaryEncoding.writeBool(value, to: &bytes) }
        func writeInt(_ value: Int64) { BinaryEncoding.writeInt(value, to: &bytes) }
        func writeUInt(_ value: UInt64) { BinaryEncoding.writeUInt(value, to: &bytes) }
        func writeDouble(_ value: Double) { BinaryEncoding.writeDouble(value, to: &bytes) }
        func writeString(_ value: String) { BinaryEncoding.writeTaggedString(value, to: &bytes) }

        /// Ready for the next encoding, keeping its buffers' capacity.
        func reset() {
            abandoned = false
            // Usually empty already (every frame finished): emptying an array costs a call.
            if !frames.isEmpty { frames.removeAll(keepingCapacity: true) }
            if !entries.isEmpty { entries.removeAll(keepingCapacity: true) }
            nextFrameID = 0
        }

        // MARK: Frames

        /// Makes frame `id` the innermost, finishing nested containers opened in it since; a
        /// nested value still being encoded, or a frame already finished, abandons the stream.
        func enter(_ id: Int) throws {
            if abandoned { throw StreamAbandoned() }
            while !frames.isEmpty, frames[frames.count - 1].id != id {
                if frames[frames.count - 1].isValue { throw abandon() }
                finishTop()
            }
            if frames.isEmpty { throw abandon() }
        }

        /// Starts an entry of the innermost frame (a map) under `key`.
        func beginEntry(_ id: Int, key: String) throws {
            try enter(id)
            entries.append((key, bytes.count))
            BinaryEncoding.writeString(key, to: &bytes)
        }

        /// Counts an element of the innermost frame (an array).
        func beginElement(_ id: Int) throws {
            try enter(id)
            frames[frames.count - 1].count += 1
        }

        /// Claims the single value of the innermost frame.
        func beginSingle(_ id: Int) throws {
            try enter(id)
            guard frames[frames.count - 1].count == 0 else { throw abandon() }
            frames[frames.count - 1].count = 1
        }

        /// Opens a nested container as the innermost frame.
        func push(_ kind: Frame.Kind) -> Int {
            let id = nextFrameID
            nextFrameID += 1
            frames.append(Frame(kind: kind, id: id, start: bytes.count, isValue: false, firstEntry: entries.count))
            bytes.append(kind == .keyed ? BinaryTag.map.rawValue : BinaryTag.array.rawValue)
            bytes.append(0)  // the count, set when the frame is finished
            return id
        }

        /// The frame of the value being encoded, as a container of `kind`; `nil` (abandoned)
        /// when it already is another kind.
        private func valueFrame(as kind: Frame.Kind) -> Int? {
            if abandoned { return nil }
            // Frames are read in place: a copy of one copied its optional key existential.
            while !frames.isEmpty, !frames[frames.count - 1].isValue { finishTop() }
            guard !frames.isEmpty else { return nil }
            let top = frames.count - 1
            if frames[top].kind == .pending {
                frames[top].kind = kind
                // The tag, then a count byte set when the frame is finished: one byte holds the
                // count of most containers, so the entries rarely move to make room.
                if kind == .keyed { bytes.append(BinaryTag.map.rawValue); bytes.append(0) }
                if kind == .unkeyed { bytes.append(BinaryTag.array.rawValue); bytes.append(0) }
                return frames[top].id
            }
            // A second container of the same kind continues the first (a subclass and its
            // superclass sharing one map); anything else the stream cannot follow.
            if frames[top].kind == kind, kind != .single { return frames[top].id }
            _ = abandon()
            return nil
        }

        private func finishTop() {
            let frame = frames.removeLast()
            switch frame.kind {
            case .pending:
                bytes.append(BinaryTag.map.rawValue)
                bytes.append(0)
            case .single:
                if frame.count == 0 {
                    bytes.append(BinaryTag.map.rawValue)
                    bytes.append(0)
                }
            case .unkeyed:
                setCount(frame.count, at: frame.start + 1)
            case .keyed:
                finishMap(frame)
            }
        }

        /// Writes `count` over the one-byte placeholder at `offset`, widening it for a count that
        /// needs more than one byte.
        private func setCount(_ count: Int, at offset: Int) {
            if count < 0x80 {
                bytes[offset] = UInt8(count)
            } else {
                scratch.removeAll(keepingCapacity: true)
                BinaryEncoding.writeVarint(UInt64(count), to: &scratch)
                bytes.replaceSubrange(offset..<(offset + 1), with: scratch)
            }
        }

        /// Counts the map's entries and puts them in key order, the last of a repeated key kept.
        private func finishMap(_ frame: Frame) {
            // One at a time: a map has few entries, and removing a range went through the
            // general `replaceSubrange`.
            defer { while entries.count > frame.firstEntry { entries.removeLast() } }
            let first = frame.firstEntry, end = entries.count
            var ordered = true
            if end - first > 1 {
                for index in first + 1..<end where !(entries[index - 1].key < entries[index].key) {
                    ordered = false
                    break
                }
            }
            if ordered {
                setCount(end - first, at: frame.start + 1)
                return
            }
            var order = Array(first..<end)
            order.sort { entries[$0].key < entries[$1].key || (entries[$0].key == entries[$1].key && $0 < $1) }
            var kept: [Int] = []
            kept.reserveCapacity(order.count)
            for index in order {
                if let last = kept.last, entries[last].key == entries[index].key { kept.removeLast() }
                kept.append(index)
            }
            scratch.removeAll(keepingCapacity: true)
            BinaryEncoding.writeVarint(UInt64(kept.count), to: &scratch)
            for index in kept {
                let entryEnd = index + 1 < end ? entries[index + 1].start : bytes.count
                scratch.append(contentsOf: bytes[entries[index].start..<entryEnd])
            }
            bytes.replaceSubrange((frame.start + 1)..., with: scratch)
        }

        // MARK: Encoder

        /// A keyed container holds nothing but this encoder and its frame id, so the one handed
        /// out for a frame id and key type serves every later value of that type in that frame.
        /// Reusing it skips making one: two generic metadata lookups (our container, the standard
        /// library's box around it) and a box allocated and freed.
        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let frame = valueFrame(as: .keyed) ?? -1
            let keyType = ObjectIdentifier(type)
            if frame >= 0, frame < keyedContainers.count, keyedContainers[frame].keyType == keyType,
               let box = keyedContainers[frame].box {
                return unsafeBitCast(box, to: KeyedEncodingContainer<Key>.self)
            }
            let container = KeyedEncodingContainer(StreamKeyedContainer<Key>(stream: self, frame: frame))
            if frame >= 0, frame < Self.keptFrames, reusesKeyedContainers {
                while keyedContainers.count <= frame { keyedContainers.append(.none) }
                keyedContainers[frame] = KeptContainer(keyType: keyType, box: unsafeBitCast(container, to: AnyObject.self))
            }
            return container
        }

        /// Whether a `KeyedEncodingContainer` is nothing but one reference to the box around the
        /// container it was made from, so that the box can be kept and the container remade from
        /// it. True of every standard library so far, but its layout is not public: this checks
        /// it once per process, through reflection, before any bits are reinterpreted.
        static let containerIsItsBox: Bool = {
            enum ProbeKey: CodingKey { case probe }
            let container = KeyedEncodingContainer(StreamKeyedContainer<ProbeKey>(stream: StreamEncoder(reusingKeyedContainers: false), frame: -1))
            let fields = Array(Mirror(reflecting: container).children)
            guard fields.count == 1, MemoryLayout<KeyedEncodingContainer<ProbeKey>>.size == MemoryLayout<AnyObject>.size,
                type(of: fields[0].value) is AnyClass else { return false }
            return unsafeBitCast(container, to: AnyObject.self) === (fields[0].value as AnyObject)
        }()

        /// Drops the kept containers, which hold this encoder: called before it is dropped.
        func forgetContainers() {
            keyedContainers.removeAll()
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            StreamUnkeyedContainer(stream: self, frame: valueFrame(as: .unkeyed) ?? -1)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            StreamSingleValueContainer(stream: self, frame: valueFrame(as: .single) ?? -1)
        }

        /// Elements written to array frame `id`.
        func count(of id: Int) -> Int {
            frames.last(where: { $0.id == id })?.count ?? 0
        }
    }

    struct StreamKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let stream: StreamEncoder
        let frame: Int
        var codingPath: [any CodingKey] { stream.codingPath }

        mutating func encodeNil(forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeNil() }
        mutating func encode(_ value: Bool, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeBool(value) }
        mutating func encode(_ value: String, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeString(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeDouble(value) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeDouble(Double(value)) }
        mutating func encode(_ value: Int, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeInt(value) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { try stream.beginEntry(frame, key: key.stringValue); stream.writeUInt(value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try stream.beginEntry(frame, key: key.stringValue)
            try stream.encodeValue(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            guard (try? stream.beginEntry(frame, key: key.stringValue)) != nil else {
                return KeyedEncodingContainer(StreamKeyedContainer<NestedKey>(stream: stream, frame: -1))
            }
            return KeyedEncodingContainer(StreamKeyedContainer<NestedKey>(stream: stream, frame: stream.push(.keyed)))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            guard (try? stream.beginEntry(frame, key: key.stringValue)) != nil else {
                return StreamUnkeyedContainer(stream: stream, frame: -1)
            }
            return StreamUnkeyedContainer(stream: stream, frame: stream.push(.unkeyed))
        }

        mutating func superEncoder() -> any Encoder {
            _ = stream.abandon()
            return stream
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            _ = stream.abandon()
            return stream
        }
    }

    struct StreamUnkeyedContainer: UnkeyedEncodingContainer {
        let stream: StreamEncoder
        let frame: Int
        var codingPath: [any CodingKey] { stream.codingPath }
        var count: Int { stream.count(of: frame) }

        mutating func encodeNil() throws { try stream.beginElement(frame); stream.writeNil() }
        mutating func encode(_ value: Bool) throws { try stream.beginElement(frame); stream.writeBool(value) }
        mutating func encode(_ value: String) throws { try stream.beginElement(frame); stream.writeString(value) }
        mutating func encode(_ value: Double) throws { try stream.beginElement(frame); stream.writeDouble(value) }
        mutating func encode(_ value: Float) throws { try stream.beginElement(frame); stream.writeDouble(Double(value)) }
        mutating func encode(_ value: Int) throws { try stream.beginElement(frame); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int8) throws { try stream.beginElement(frame); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int16) throws { try stream.beginElement(frame); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int32) throws { try stream.beginElement(frame); stream.writeInt(Int64(value)) }
        mutating func encode(_ value: Int64) throws { try stream.beginElement(frame); stream.writeInt(value) }
        mutating func encode(_ value: UInt) throws { try stream.beginElement(frame); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { try stream.beginElement(frame); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt16) throws { try stream.beginElement(frame); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt32) throws { try stream.beginElement(frame); stream.writeUInt(UInt64(value)) }
        mutating func encode(_ value: UInt64) throws { try stream.beginElement(frame); stream.writeUInt(value) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            try stream.beginElement(frame)
            try stream.encodeValue(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            guard (try? stream.beginElement(frame)) != nil else {
                return KeyedEncodingContainer(StreamKeyedContainer<NestedKey>(stream: stream, frame: -1))
            }
            return KeyedEncodingContainer(StreamKeyedContainer<NestedKey>(stream: stream, frame: stream.push(.keyed)))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            guard (try? stream.beginElement(frame)) != nil else { return StreamUnkeyedContainer(stream: stream, frame: -1) }
            return StreamUnkeyedContainer(stream: stream, frame: stream.push(.unkeyed))
        }

        mutating func superEncoder() -> any Encoder {
            _ = stream.abandon()
            return stream
        }
    }

    struct StreamSingleValueContainer: SingleValueEncodingContainer {
        let stream: StreamEncoder
        let frame: Int
        var codingPath: [any CodingKey] { stream.codingPath }

        func encodeNil() throws { try stream.beginSingle(frame); stream.writeNil() }
        func encode(_ value: Bool) throws { try stream.beginSingle(frame); stream.writeBool(value) }
        func encode(_ value: String) throws { try stream.beginSingle(frame); stream.writeString(value) }
        func encode(_ value: Double) throws { try stream.beginSingle(frame); stream.writeDouble(value) }
        func encode(_ value: Float) throws { try stream.beginSingle(frame); stream.writeDouble(Double(value)) }
        func encode(_ value: Int) throws { try stream.beginSingle(frame); stream.writeInt(Int64(value)) }
        func encode(_ value: Int8) throws { try stream.beginSingle(frame); stream.writeInt(Int64(value)) }
        func encode(_ value: Int16) throws { try stream.beginSingle(frame); stream.writeInt(Int64(value)) }
        func encode(_ value: Int32) throws { try stream.beginSingle(frame); stream.writeInt(Int64(value)) }
        func encode(_ value: Int64) throws { try stream.beginSingle(frame); stream.writeInt(value) }
        func encode(_ value: UInt) throws { try stream.beginSingle(frame); stream.writeUInt(UInt64(value)) }
        func encode(_ value: UInt8) throws { try stream.beginSingle(frame); stream.writeUInt(UInt64(value)) }
        func encode(_ value: UInt16) throws { try stream.beginSingle(frame); stream.writeUInt(UInt64(value)) }
        func encode(_ value: UInt32) throws { try stream.beginSingle(frame); stream.writeUInt(UInt64(value)) }
        func encode(_ value: UInt64) throws { try stream.beginSingle(frame); stream.writeUInt(value) }
        func encode<T: Encodable>(_ value: T) throws {
            try stream.beginSingle(frame)
            try stream.encodeValue(value)
        }
    }
}
