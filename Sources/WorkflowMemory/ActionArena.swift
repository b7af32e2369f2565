/// The actions of one commit batch, each stored unboxed, at its type's alignment, in chunks of
/// memory that never move; freed (each value deinitialized first) with the arena. The host's
/// thread stores an action as it records it; the writer reads it in place through its address to
/// encode it. An action kept as an existential would be boxed on the host's thread, and copied
/// out, projected and destroyed on the writer's.
//
// @unchecked Sendable, so that a batch holding its arena can be handed to the writer's thread:
// an arena is written (`store`) only by the thread running its host, while its batch is the
// journal's pending one; once the batch is handed off (through the log writer's mutex, or taken
// by a commit on the host's own thread) the journal starts a new batch with another arena, and
// the old one is only read. The hand-off's lock orders every write before every read. Once its
// batch is committed and settled, the committer may `reset` the arena, if nothing else holds it
// (`isKnownUniquelyReferenced`), and hand it back to the host through the same mutex for a later
// batch: the reset is the last thing that thread does with it, and the lock orders it before the
// host's next `store`. The values stored are actions, which are `Sendable`, so reading and
// deinitializing them on another thread is safe too.
public final class ActionArena: @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var chunks: [UnsafeMutableRawPointer] = []
    /// The free space of the newest chunk.
    @usableFromInline @exclusivity(unchecked) var next: UnsafeMutableRawPointer?
    @usableFromInline @exclusivity(unchecked) var end: UnsafeMutableRawPointer?
    /// Size of the first chunk, and of later ones.
    @usableFromInline let firstChunk: Int
    @usableFromInline let chunkSize: Int
    /// Stored values whose type is not trivially destroyed, with that type.
    @usableFromInline @exclusivity(unchecked) var toDeinitialize: [(address: UnsafeMutableRawPointer, type: Any.Type)] = []

    /// An arena sized for about `expected` small actions at first, growing by `chunkSize` bytes
    /// (or as much as a larger value needs).
    public init(expected: Int, chunkSize: Int = 16 << 10) {
        self.chunkSize = chunkSize
        firstChunk = min(chunkSize, max(256, expected * 32))
    }

    deinit {
        for value in toDeinitialize { Self.deinitialize(value.address, as: value.type) }
        for chunk in chunks { chunk.deallocate() }
    }

    /// Deinitializes every stored value and frees every chunk but the first, which the next
    /// values fill again: the arena is as new, without its first allocation. Every slot it gave
    /// out is invalid from now on.
    public func reset() {
        for value in toDeinitialize { Self.deinitialize(value.address, as: value.type) }
        toDeinitialize.removeAll(keepingCapacity: true)
        guard let first = chunks.first else { return }
        for chunk in chunks.dropFirst() { chunk.deallocate() }
        chunks.removeSubrange(1...)
        next = first
        end = first + firstChunk
    }

    /// Stores a copy of `value`; returns its slot, valid while the arena lives.
    @inlinable
    public func store<A>(_ value: A) -> ActionSlot {
        let size = MemoryLayout<A>.size, alignment = MemoryLayout<A>.alignment
        var address = next.map { Self.align($0, to: alignment) }
        if address == nil || address! + size > end! {
            let capacity = max(chunks.isEmpty ? firstChunk : chunkSize, size + alignment)
            let chunk = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: max(alignment, 16))
            chunks.append(chunk)
            end = chunk + capacity
            address = chunk
        }
        let slot = address!
        slot.initializeMemory(as: A.self, to: value)
        next = slot + size
        if !_isPOD(A.self) { toDeinitialize.append((slot, A.self)) }
        return ActionSlot(address: UnsafeRawPointer(slot), type: ObjectIdentifier(A.self))
    }

    /// Runs `body` with the address of the action in `slot` (one of this arena's), for the
    /// duration of the call: the action is a value of the type `slot.type` names.
    @inlinable
    public func withUnsafeAddress<Result>(of slot: ActionSlot, _ body: (UnsafeRawPointer) throws -> Result) rethrows -> Result {
        try body(slot.address)
    }

    /// A copy of the value in `slot` (one of this arena's); `nil` when it is not an `A`.
    public func value<A>(in slot: ActionSlot, as type: A.Type) -> A? {
        guard slot.type == ObjectIdentifier(A.self) else { return nil }
        return slot.address.assumingMemoryBound(to: A.self).pointee
    }

    @usableFromInline
    static func align(_ pointer: UnsafeMutableRawPointer, to alignment: Int) -> UnsafeMutableRawPointer {
        let bits = UInt(bitPattern: pointer), mask = UInt(alignment - 1)
        return UnsafeMutableRawPointer(bitPattern: (bits + mask) & ~mask).unsafelyUnwrapped
    }

    private static func deinitialize(_ address: UnsafeMutableRawPointer, as type: Any.Type) {
        func deinitialize<T>(_: T.Type) { address.assumingMemoryBound(to: T.self).deinitialize(count: 1) }
        deinitialize(type)
    }
}

/// Where one action lies in its batch's arena, and its type. Only the arena reads through it.
//
// @unchecked Sendable: the address is read only through `ActionArena`'s `withUnsafeAddress(of:_:)`
// and `value(in:as:)`, whose callers hold the arena (which keeps the memory alive) and follow its
// hand-off rule above.
public struct ActionSlot: @unchecked Sendable {
    @usableFromInline let address: UnsafeRawPointer
    /// The `ObjectIdentifier` of the stored action's type.
    public let type: ObjectIdentifier

    @inlinable
    init(address: UnsafeRawPointer, type: ObjectIdentifier) {
        self.address = address
        self.type = type
    }

    /// Whether the action lies at a multiple of `alignment`.
    public func isAligned(to alignment: Int) -> Bool { Int(bitPattern: address) % alignment == 0 }
}
