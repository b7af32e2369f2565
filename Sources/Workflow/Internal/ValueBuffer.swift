/// A growable buffer of values of a generic type whose operations need no runtime metadata
/// lookups.
///
/// The runtime is generic over the user's workflow types and runs unspecialised; every use of
/// `Array<Element>` there asks the Swift runtime for the metadata of that array type (a hash
/// lookup), which cost a third of a one-node action. The buffer reaches its elements through a
/// pointer whose element type comes from the instance itself, so appending, visiting and
/// emptying cost no lookups. Drainer-only, like the rest of the runtime's state.
final class ValueBuffer<Element> {
    private var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 4) {
        self.capacity = Swift.max(capacity, 1)
        base = UnsafeMutablePointer<Element>.allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    func append(_ element: Element) {
        if count == capacity {
            let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: base, count: count)
            base.deallocate()
            base = larger
            capacity *= 2
        }
        (base + count).initialize(to: element)
        count += 1
    }

    /// Calls `body` with each element, oldest first, then empties the buffer. Elements appended
    /// by `body` are visited too.
    func drain(_ body: (Element) -> Void) {
        var index = 0
        while index < count {
            body(base[index])
            index += 1
        }
        removeAll()
    }

    /// Calls `body` with each of the oldest `prefix` elements, oldest first, then removes them;
    /// the later elements move to the front, in order.
    func drain(prefix: Int, _ body: (Element) -> Void) {
        let prefix = Swift.min(prefix, count)
        for index in 0..<prefix { body(base[index]) }
        base.deinitialize(count: prefix)
        base.moveInitialize(from: base + prefix, count: count - prefix)
        count -= prefix
    }

    func removeAll() {
        base.deinitialize(count: count)
        count = 0
    }
}
