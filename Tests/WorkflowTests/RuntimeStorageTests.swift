@testable import Workflow
import TestSupport
import Testing

/// The runtime's rendering publisher, on its own: every rendering handed out in order and
/// destroyed once (the suite also runs under AddressSanitizer, which reports a use after free,
/// a double free or a leak). The raw containers it is built on are tested in WorkflowMemoryTests.
@Suite("The runtime's rendering publisher")
struct RuntimeStorageTests {
    @Test("a RenderingPublisher keeps the latest rendering; streams see each one in order from the one current when they opened")
    func publisherStreams() async {
        let tracker = LiveCount()
        do {
            let publisher = RenderingPublisher<Counted>()
            func publish(_ values: Range<Int>) {
                let run = UnsafeMutablePointer<Counted>.allocate(capacity: values.count)
                defer { run.deallocate() }
                for (index, value) in values.enumerated() { (run + index).initialize(to: Counted(value, tracker)) }
                publisher.publish(movingAll: run, count: values.count)
            }
            let one = UnsafeMutablePointer<Counted>.allocate(capacity: 1)
            one.initialize(to: Counted(0, tracker))
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
