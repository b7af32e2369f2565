/// A growable buffer of values of a generic type whose operations need no runtime metadata
/// lookups.
///
/// The runtime is generic over the user's workflow types and runs unspecialised; every use of
/// `Array<Element>` there asks the Swift runtime for the metadata of that array type (a hash
/// lookup) on the path of every action. The buffer reaches its elements through a
/// pointer whose element type comes from the instance itself, so appending, visiting and
/// emptying cost no lookups. Also the host's first-in-first-out queue (``popFirst(into:)``): popping
/// moves the element out and moves nothing else. Drainer-only, like the rest of the runtime's
/// state; the queue is touched only under the inbox's lock.
public final class ValueBuffer<Element> {
    @usableFromInline @exclusivity(unchecked) var base: UnsafeMutablePointer<Element>
    @usableFromInline @exclusivity(unchecked) var capacity: Int
    /// The elements are `base[head..<end]`: removing the oldest ones moves nothing.
    @usableFromInline @exclusivity(unchecked) var head = 0
    @usableFromInline @exclusivity(unchecked) var end = 0

    @inlinable
    public init(capacity: Int = 4) {
        self.capacity = Swift.max(capacity, 1)
        base = UnsafeMutablePointer<Element>.allocate(capacity: self.capacity)
    }

    deinit {
        (base + head).deinitialize(count: end - head)
        base.deallocate()
    }

    @inlinable public var count: Int {
        @inline(__always) get { end - head }
    }
    @inlinable public var isEmpty: Bool {
        @inline(__always) get { head == end }
    }

    @inlinable @inline(__always)
    public func append(_ element: consuming Element) {
        if end == capacity { makeRoom() }
        (base + end).initialize(to: element)
        end += 1
    }

    /// Moves the elements to the front: of this storage when at least half of it is free, else
    /// of storage twice as large.
    @usableFromInline
    func makeRoom() {
        let live = end - head
        if head > 0 && live <= capacity / 2 {
            base.moveInitialize(from: base + head, count: live)
        } else {
            let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: base + head, count: live)
            base.deallocate()
            base = larger
            capacity *= 2
        }
        head = 0
        end = live
    }

    /// Moves the oldest element into `slot` (uninitialised) and returns `true`, or returns
    /// `false` when empty: no optional element to make and destroy.
    @inlinable @inline(__always)
    public func popFirst(into slot: borrowing ValueSlot<Element>) -> Bool {
        guard head < end else { return false }
        slot.storage.moveInitialize(from: base + head, count: 1)
        head += 1
        if head == end {
            head = 0
            end = 0
        }
        return true
    }

    /// Calls `body` with each element, oldest first, emptying the buffer. Elements appended by
    /// `body` are visited too.
    @inlinable
    public func drain(_ body: (consuming Element) -> Void) {
        drain(movingEach: { body($0.move()) })
    }

    /// Calls `body` with each of the oldest `prefix` elements, oldest first, removing them.
    @inlinable
    public func drain(prefix: Int, _ body: (consuming Element) -> Void) {
        drain(prefix: prefix, movingEach: { body($0.move()) })
    }

    /// As ``drain(_:)``, handing `body` each element in place: `body` must move it out (leave
    /// the memory uninitialised), which spares a copy where the element goes on into storage.
    @inlinable
    public func drain(movingEach body: (UnsafeMutablePointer<Element>) -> Void) {
        while head < end {
            let element = base + head
            head += 1
            body(element)
        }
        head = 0
        end = 0
    }

    /// As ``drain(prefix:_:)``, handing `body` each element in place to move out (see
    /// ``drain(movingEach:)``).
    @inlinable
    public func drain(prefix: Int, movingEach body: (UnsafeMutablePointer<Element>) -> Void) {
        var remaining = Swift.min(prefix, end - head)
        while remaining > 0 {
            let element = base + head
            head += 1
            remaining -= 1
            body(element)
        }
        if head == end {
            head = 0
            end = 0
        }
    }

    /// Hands `body` the oldest `prefix` elements (at most `count`) as one contiguous run, removing
    /// them: `body` must move out or deinitialize every one.
    @inlinable
    public func drain(prefix: Int, movingRun body: (UnsafeMutablePointer<Element>, Int) -> Void) {
        let taken = Swift.min(prefix, end - head)
        guard taken > 0 else { return }
        let first = base + head
        head += taken
        body(first, taken)
        if head == end {
            head = 0
            end = 0
        }
    }

    @inlinable
    public func removeAll() {
        (base + head).deinitialize(count: end - head)
        head = 0
        end = 0
    }
}
