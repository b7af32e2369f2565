@testable import Workflow
import Synchronization
import Testing

/// Counts the live instances made with it, so a test sees every element destroyed exactly once.
private final class Tracked: Sendable {
    let value: Int
    let live: Tracker

    init(_ value: Int, _ live: Tracker) {
        self.value = value
        self.live = live
        live.count.add(1, ordering: .relaxed)
    }

    deinit { live.count.subtract(1, ordering: .relaxed) }
}

private final class Tracker: Sendable {
    let count = Atomic<Int>(0)
    var live: Int { count.load(ordering: .relaxed) }
}

/// The runtime's pointer-backed containers, on their own: every element handed out once, in
/// order, and destroyed once (the suite also runs under AddressSanitizer, which reports a use
/// after free, a double free or a leak).
@Suite("The runtime's own storage: ValueBuffer, RenderingPublisher and node state cells")
struct RuntimeStorageTests {
    @Test("a ValueBuffer hands its elements out oldest first across growth and compaction, and destroys what it still holds")
    func valueBufferOrder() {
        let tracker = Tracker()
        do {
            let buffer = ValueBuffer<Tracked>(capacity: 2)
            var expected = 0, next = 0
            let slot = UnsafeMutablePointer<Tracked>.allocate(capacity: 1)
            defer { slot.deallocate() }
            // Appends and pops in an uneven rhythm: the storage grows, and compacts when half free.
            for round in 0..<200 {
                for _ in 0..<(round % 7 + 1) {
                    buffer.append(Tracked(next, tracker))
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
        let tracker = Tracker()
        do {
            let buffer = ValueBuffer<Tracked>(capacity: 1)
            for value in 0..<3 { buffer.append(Tracked(value, tracker)) }
            var seen: [Int] = []
            buffer.drain { element in
                seen.append(element.value)
                // Appending while draining, past the capacity: the storage grows under the drain.
                if element.value < 40 { buffer.append(Tracked(element.value + 3, tracker)) }
            }
            #expect(seen == Array(0...42))
            #expect(buffer.isEmpty && tracker.live == 0)

            for value in 0..<10 { buffer.append(Tracked(value, tracker)) }
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

            for value in 0..<5 { buffer.append(Tracked(value, tracker)) }
            buffer.removeAll()
            #expect(buffer.isEmpty && tracker.live == 0)
            buffer.append(Tracked(99, tracker))
        }
        #expect(tracker.live == 0)
    }

    @Test("a RenderingPublisher keeps the latest rendering; streams see each one in order from the one current when they opened")
    func publisherStreams() async {
        let tracker = Tracker()
        do {
            let publisher = RenderingPublisher<Tracked>()
            func publish(_ values: Range<Int>) {
                let run = UnsafeMutablePointer<Tracked>.allocate(capacity: values.count)
                defer { run.deallocate() }
                for (index, value) in values.enumerated() { (run + index).initialize(to: Tracked(value, tracker)) }
                publisher.publish(movingAll: run, count: values.count)
            }
            let one = UnsafeMutablePointer<Tracked>.allocate(capacity: 1)
            one.initialize(to: Tracked(0, tracker))
            publisher.publish(movingFrom: one)
            one.deallocate()
            // With no stream, a run keeps only its last: the others are destroyed unseen.
            publish(1..<5)
            #expect(publisher.current.value == 4 && tracker.live == 1)

            let stream = publisher.stream()
            publish(5..<8)
            publisher.finish()
            var seen: [Int] = []
            for await rendering in stream { seen.append(rendering.value) }
            #expect(seen == [4, 5, 6, 7])
            #expect(publisher.current.value == 7)
            // A stream opened after finish gets the current rendering and ends.
            var late: [Int] = []
            for await rendering in publisher.stream() { late.append(rendering.value) }
            #expect(late == [7])
            publisher.clear()
            #expect(tracker.live == 0, "clear destroyed the current rendering")
            publish(8..<9)
        }
        #expect(tracker.live == 0, "the publisher destroyed its rendering")
    }

    @Test("a node state cell names its state's type and shows the state where it lies, as it changes")
    func nodeStateCell() {
        struct Counter: Equatable { var count: Int; var name: String }
        let storage = UnsafeMutablePointer<Counter>.allocate(capacity: 1)
        storage.initialize(to: Counter(count: 1, name: "a"))
        defer {
            storage.deinitialize(count: 1)
            storage.deallocate()
        }
        let cell = NodeStateCell(storage)
        #expect(cell.type == ObjectIdentifier(Counter.self))
        #expect(cell.withUnsafeAddress { $0.assumingMemoryBound(to: Counter.self).pointee } == Counter(count: 1, name: "a"))
        storage.pointee.count += 41
        #expect(cell.withUnsafeAddress { $0.assumingMemoryBound(to: Counter.self).pointee.count } == 42)
    }
}
