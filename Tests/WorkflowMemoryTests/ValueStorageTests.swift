import TestSupport
import Testing
import WorkflowMemory

/// The raw containers on their own: every element handed out once, in order, and destroyed
/// once (the suite also runs under AddressSanitizer, which reports a use after free, a double
/// free or a leak).
@Suite("Value buffers, value slots and node state cells")
struct ValueStorageTests {
    @Test("a ValueBuffer hands its elements out oldest first across growth and compaction, and destroys what it still holds")
    func valueBufferOrder() {
        let tracker = LiveCount()
        do {
            let buffer = ValueBuffer<Counted>(capacity: 2)
            var expected = 0, next = 0
            let slot = ValueSlot<Counted>()
            // Appends and pops in an uneven rhythm: the storage grows, and compacts when half free.
            for round in 0..<200 {
                for _ in 0..<(round % 7 + 1) {
                    buffer.append(Counted(next, tracker))
                    next += 1
                }
                for _ in 0..<(round % 5) {
                    guard buffer.popFirst(into: slot) else { break }
                    #expect(slot.move().value == expected)
                    expected += 1
                }
                #expect(buffer.count == next - expected)
                #expect(tracker.live == buffer.count)
            }
            #expect(buffer.count > 0, "some are left for the buffer's deinit")
        }
        #expect(tracker.live == 0, "the buffer destroyed what it held")
    }

    @Test("draining visits elements appended meanwhile; prefix drains take only the oldest; removeAll destroys the rest")
    func valueBufferDrains() {
        let tracker = LiveCount()
        do {
            let buffer = ValueBuffer<Counted>(capacity: 1)
            for value in 0..<3 { buffer.append(Counted(value, tracker)) }
            var seen: [Int] = []
            buffer.drain { element in
                seen.append(element.value)
                // Appending while draining, past the capacity: the storage grows under the drain.
                if element.value < 40 { buffer.append(Counted(element.value + 3, tracker)) }
            }
            #expect(seen == Array(0...42))
            #expect(buffer.isEmpty && tracker.live == 0)

            for value in 0..<10 { buffer.append(Counted(value, tracker)) }
            var prefix: [Int] = []
            buffer.drain(prefix: 3) { prefix.append($0.value) }
            #expect(prefix == [0, 1, 2] && buffer.count == 7 && tracker.live == 7)
            buffer.drain(prefix: 2, movingRun: { first, count in
                #expect(count == 2 && first[0].value == 3 && first[1].value == 4)
                first.deinitialize(count: count)
            })
            #expect(buffer.count == 5 && tracker.live == 5)
            buffer.drain(prefix: 100, movingEach: { element in
                let moved = element.move()
                #expect(moved.value >= 5)
            })
            #expect(buffer.isEmpty && tracker.live == 0)

            for value in 0..<5 { buffer.append(Counted(value, tracker)) }
            buffer.removeAll()
            #expect(buffer.isEmpty && tracker.live == 0)
            buffer.append(Counted(99, tracker))
        }
        #expect(tracker.live == 0)
    }

    @Test("a value slot holds one value in place: initialized, read and changed, moved out, replaced by a buffer element, destroyed")
    func valueSlot() {
        let tracker = LiveCount()
        do {
            let slot = ValueSlot<Counted>()
            slot.initialize(to: Counted(1, tracker))
            #expect(slot.value.value == 1 && tracker.live == 1)
            slot.value = Counted(2, tracker)
            #expect(slot.value.value == 2 && tracker.live == 1, "assigning destroys the value it replaces")
            let moved = slot.move()
            #expect(moved.value == 2 && tracker.live == 1)

            let buffer = ValueBuffer<Counted>()
            for value in 3...5 { buffer.append(Counted(value, tracker)) }
            var replacing = false
            buffer.drain(prefix: 3, movingEach: { element in
                slot.take(from: element, replacing: replacing)
                replacing = true
            })
            #expect(slot.value.value == 5 && tracker.live == 2, "each take replaced and destroyed the one before")
            slot.deinitialize()
            #expect(tracker.live == 1)

            let full = ValueSlot(Counted(6, tracker))
            #expect(full.value.value == 6)
            full.deinitialize()
        }
        #expect(tracker.live == 0)
    }

    @Test("a node state cell names its state's type and shows the state where it lies, as it changes")
    func nodeStateCell() {
        struct Counter: Equatable { var count: Int; var name: String }
        let slot = ValueSlot(Counter(count: 1, name: "a"))
        defer { slot.deinitialize() }
        let cell = slot.cell
        #expect(cell.type == ObjectIdentifier(Counter.self))
        #expect(cell.withUnsafeAddress { $0.assumingMemoryBound(to: Counter.self).pointee } == Counter(count: 1, name: "a"))
        slot.value.count += 41
        #expect(cell.withUnsafeAddress { $0.assumingMemoryBound(to: Counter.self).pointee.count } == 42)
    }
}
