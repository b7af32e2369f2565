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

/// The runtime's rendering publisher, on its own: every rendering handed out in order and
/// destroyed once (the suite also runs under AddressSanitizer, which reports a use after free,
/// a double free or a leak). The raw containers it is built on are tested in WorkflowMemoryTests.
@Suite("The runtime's rendering publisher")
struct RuntimeStorageTests {
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
}
