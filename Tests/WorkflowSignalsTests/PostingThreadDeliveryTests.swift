import Foundation
import Synchronization
import TestSupport
import Testing
import WorkflowLocks
import WorkflowSignals

/// `SignalConfiguration.deliverOnPostingThread`: a post that finds the dispatcher asleep delivers
/// itself, and posting threads and the dispatcher take turns without ever overlapping. The poll
/// interval is an hour, so anything late would be waiting for a wake-up that never came.
@Suite("Delivering on the posting thread")
struct PostingThreadDeliveryTests {
    func open(_ dir: TemporaryDirectory, onPostingThread: Bool) throws -> SignalCenter {
        try SignalCenter.open(path: dir.path, processIdentity: "p", configuration: .init(
            pollInterval: .seconds(3600), durability: .processCrashSafe, spinAfterDelivery: .zero, deliverOnPostingThread: onPostingThread))
    }

    /// Posts `count` versions 1 ms apart, each after the previous delivery; returns the versions
    /// delivered and how many were delivered before their `post` returned, on the posting thread.
    func sparsePosts(onPostingThread: Bool, count: Int) throws -> (versions: [UInt64], inline: Int) {
        let dir = TemporaryDirectory("sig-inline")
        let center = try open(dir, onPostingThread: onPostingThread)
        defer { try? center.stop() }
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        let threads = Lock<[UInt64: UInt]>([:])
        center.attach(consumer, handler: .atLeastOnce { delivery in
            threads.withLock { $0[delivery.version] = UInt(pthread_self()) }
            received.append(delivery.version)
        })
        var inline = 0
        for index in 1...count {
            usleep(1000)
            let version = try center.post(signal, payload: [1], terminatesConsumersAfterDelivery: false)
            if received.all.count == index, threads.withLock({ $0[version] }) == UInt(pthread_self()) { inline += 1 }
            guard eventually(timeout: .seconds(5), { received.all.count == index }) else { break }
        }
        return (received.all, inline)
    }

    @Test("a post that finds the dispatcher asleep delivers before it returns")
    func deliversInline() throws {
        let (versions, inline) = try sparsePosts(onPostingThread: true, count: 50)
        #expect(versions == Array(1...50))
        // The dispatcher sleeps between posts (no spin, hour-long poll), so nearly every post
        // finds it asleep; a loaded machine may keep it awake for a few.
        #expect(inline >= 25, "\(inline) of 50 delivered on the posting thread")
    }

    @Test("without the option, the dispatcher thread delivers every version")
    func offByDefault() throws {
        #expect(SignalConfiguration().deliverOnPostingThread == false)
        let (versions, inline) = try sparsePosts(onPostingThread: false, count: 20)
        #expect(versions == Array(1...20))
        #expect(inline == 0)
    }

    @Test("posting threads and the dispatcher never overlap: each version once, in order")
    func concurrentPosters() async throws {
        let dir = TemporaryDirectory("sig-inline-concurrent")
        let center = try open(dir, onPostingThread: true)
        defer { try? center.stop() }
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        let inside = Atomic<Int>(0), overlaps = Atomic<Int>(0)
        // At least once: no transaction serialises these handlers, only the turn-taking does.
        center.attach(consumer, handler: .atLeastOnce { delivery in
            if inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
            received.append(delivery.version)
            usleep(UInt32.random(in: 0...50))
            inside.subtract(1, ordering: .sequentiallyConsistent)
        })
        let posters = 4, each = 150
        let threads = (0..<posters).map { _ in
            Thread {
                for _ in 0..<each {
                    _ = try? center.post(signal, payload: [1], terminatesConsumersAfterDelivery: false)
                    if Bool.random() { usleep(UInt32.random(in: 0...300)) }
                }
            }
        }
        threads.forEach { $0.start() }
        #expect(eventually(timeout: .seconds(30)) { received.all.count >= posters * each })
        #expect(received.all == Array(1...UInt64(posters * each)))
        #expect(overlaps.load(ordering: .relaxed) == 0)
    }

    @Test("a post from a handler leaves its delivery to the dispatcher, which is woken for it")
    func postFromHandler() throws {
        let dir = TemporaryDirectory("sig-inline-nested")
        let center = try open(dir, onPostingThread: true)
        defer { try? center.stop() }
        let first = SignalID(), second = SignalID()
        let firstConsumer = try center.register(first, owner: "o")
        let secondConsumer = try center.register(second, owner: "o")
        let received = Received()
        center.attach(firstConsumer, handler: .atMostOnce { delivery in
            _ = try? center.post(second, payload: [2], terminatesConsumersAfterDelivery: false)
        })
        center.attach(secondConsumer, handler: .atMostOnce { received.append($0.version) })
        usleep(2000)
        for _ in 1...5 {
            try center.post(first, payload: [1], terminatesConsumersAfterDelivery: false)
            usleep(1000)
        }
        #expect(eventually(timeout: .seconds(5)) { received.all == [1, 2, 3, 4, 5] })
    }

    @Test("a handler may stop the center, and nothing is delivered after")
    func stopFromHandler() throws {
        let dir = TemporaryDirectory("sig-inline-stop")
        let center = try open(dir, onPostingThread: true)
        let signal = SignalID()
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        center.attach(consumer, handler: .atLeastOnce { delivery in
            received.append(delivery.version)
            if delivery.version == 3 { try center.stop() }
        })
        for _ in 1...6 {
            usleep(1000)
            _ = try? center.post(signal, payload: [1], terminatesConsumersAfterDelivery: false)
        }
        usleep(20_000)
        #expect(received.all == [1, 2, 3])
    }
}
