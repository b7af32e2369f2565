/// Storage for one value of type `Value`, allocated with the slot and freed with it. Whether it
/// holds a value is its owner's to track (a flag, or a state that always has one): the owner
/// initializes it before reading and deinitializes or moves the value out before the slot goes.
/// The value never moves while the slot lives, so a ``NodeStateCell`` can show it in place.
///
/// The runtime uses slots where an `Optional<Value>` of the user's types would cost the
/// unspecialised runtime metadata lookups and a copy per action: the host's popped queue item,
/// the action just applied, the current rendering, each node's state.
public struct ValueSlot<Value>: ~Copyable {
    @usableFromInline let storage: UnsafeMutablePointer<Value>

    /// An empty slot.
    @inlinable
    public init() {
        storage = .allocate(capacity: 1)
    }

    /// A slot holding `value`.
    @inlinable
    public init(_ value: consuming Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deallocate()
    }

    /// The value held (the slot must hold one), read and changed in place.
    @inlinable
    public var value: Value {
        @inline(__always) unsafeAddress { UnsafePointer(storage) }
        @inline(__always) nonmutating unsafeMutableAddress { storage }
    }

    /// Puts `value` into the empty slot.
    @inlinable @inline(__always)
    public func initialize(to value: consuming Value) {
        storage.initialize(to: value)
    }

    /// Takes the value out, leaving the slot empty.
    @inlinable @inline(__always)
    public func move() -> Value {
        storage.move()
    }

    /// Destroys the value held, leaving the slot empty.
    @inlinable @inline(__always)
    public func deinitialize() {
        storage.deinitialize(count: 1)
    }

    /// Moves the value at `source` (an element a ``ValueBuffer`` drain hands out) into the slot,
    /// which must be empty (`replacing: false`) or hold a value (`replacing: true`, destroyed
    /// first); `source` is left uninitialised.
    @inlinable @inline(__always)
    public func take(from source: UnsafeMutablePointer<Value>, replacing: Bool) {
        if replacing {
            storage.moveUpdate(from: source, count: 1)
        } else {
            storage.moveInitialize(from: source, count: 1)
        }
    }

    /// A view of the value held, for reading it in place while the slot lives.
    @inlinable
    public var cell: NodeStateCell { NodeStateCell(storage) }
}
