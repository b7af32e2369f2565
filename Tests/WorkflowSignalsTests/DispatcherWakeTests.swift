import Foundation
import Synchronization
import TestSupport
import Testing
import WorkflowSignals

/// Local wake-ups reach the dispatcher whether it is spinning, delivering or asleep. The poll
/// interval is an hour, so only a wake-up (never the fallback poll) can deliver in time.
@Suite("Waking the signal dispatcher")
struct DispatcherWakeTests {
    /// Posts `count` versions, each after the previous one was delivered and `pause` µs more;
    /// returns the versions handed over, in order.
    func pingPong(spin: Duration, pause: UInt32, count: Int) throws -> [UInt64] {
        let dir = TemporaryDirectory("sig-wake")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p", configuration: .init(
            pollInterval: .seconds(3600), durability: .processCrashSafe, spinAfterDelivery: spin))
        defer { try? center.stop() }
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        center.attach(consumer, handler: .atMostOnce { received.append($0.version) })
        for index in 1...count {
            if pause > 0 { usleep(pause) }
            try center.post(signal, payload: [1], terminatesConsumersAfterDelivery: false)
            guard eventually(timeout: .seconds(5), { received.all.count == index }) else { break }
        }
        return received.all
    }

    @Test("back-to-back posts reach a spinning dispatcher")
    func spinning() throws {
        #expect(try pingPong(spin: .milliseconds(50), pause: 0, count: 300) == Array(1...300))
    }

    @Test("posts just around the end of the spin reach the dispatcher as it goes to sleep")
    func aroundTheEndOfTheSpin() throws {
        // Pauses of 100-400 µs against a 250 µs spin: some posts land while it spins, some as it
        // stops, some while it sleeps; none may wait for the hour-long poll.
        var versions: [UInt64] = []
        for pause: UInt32 in [100, 200, 250, 300, 400] {
            versions = try pingPong(spin: .microseconds(250), pause: pause, count: 60)
            #expect(versions == Array(1...60), "pause \(pause) µs")
        }
    }

    @Test("with no spin every post wakes the sleeping dispatcher")
    func noSpin() throws {
        #expect(try pingPong(spin: .zero, pause: 0, count: 200) == Array(1...200))
    }

    @Test("a post to a center with no handler attached does not need its dispatcher; attaching later delivers")
    func attachAfterPosts() throws {
        let dir = TemporaryDirectory("sig-wake-attach")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "p", configuration: .init(
            pollInterval: .seconds(3600), durability: .processCrashSafe))
        defer { try? center.stop() }
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        for _ in 1...5 { try center.post(signal, payload: [1], terminatesConsumersAfterDelivery: false) }
        let received = Received()
        center.attach(consumer, handler: .atMostOnce { received.append($0.version) })
        #expect(eventually(timeout: .seconds(5)) { received.all == [1, 2, 3, 4, 5] })
    }
}
