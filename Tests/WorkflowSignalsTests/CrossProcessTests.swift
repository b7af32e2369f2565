import DurableWorkflow
import Foundation
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowSignals

@Suite("Signals across processes (S3, S6)")
struct CrossProcessTests {
    @Test("a consumer process killed with SIGKILL 20+ times while another process posts 1,000 versions delivers each exactly once")
    func consumerKilledRepeatedly() async throws {
        let dir = TemporaryDirectory("sig-kill")
        let signal = SignalID()
        // Create the store and register the consumer before anything is posted: versions posted
        // while a signal has no consumer are pruned down to the newest (retention).
        do {
            let setup = try SignalCenter.open(path: dir.path, processIdentity: "setup")
            try setup.register(signal, owner: "test", behaviour: .untilTerminated, scope: .durable, id: ConsumerID(stableName: "test-consumer"))
            try setup.stop()
        }
        let poster = try ChildProcess(["signal-post", dir.path, signal.description, "1000", "3000", "terminate"], mergeStandardError: true)
        var kills = 0
        while kills < 20 {
            let consumer = try ChildProcess(["signal-consume", dir.path, signal.description], mergeStandardError: true)
            #expect(consumer.readLine() == "ready")
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...120)))
            consumer.kill()
            try consumer.waitForExit()
            kills += 1
        }
        // Let the poster finish, then run the consumer to the terminating version.
        #expect(poster.readLine(timeout: .seconds(60)) == "posted 1000")
        try poster.waitForExit()
        let last = try ChildProcess(["signal-consume", dir.path, signal.description], mergeStandardError: true)
        #expect(last.readLine(until: { $0 == "done" }, timeout: .seconds(60)) == "done")
        try last.waitForExit()

        let center = try SignalCenter.open(path: dir.path, processIdentity: "check")
        func number(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
        let versions = try center.entries(in: center.table(named: "test.delivered")).map { number($0.key) }
        #expect(try center.entries(in: center.table(named: "test.duplicates")).isEmpty)
        // Only key 0 (the last version handled): every version followed the one before it.
        let order = try center.entries(in: center.table(named: "test.order"))
        #expect(order.count == 1)
        #expect(order.first.map { number($0.value) } == 1000)
        #expect(kills >= 20)
        #expect(versions.count == 1000, "\(versions.count) versions delivered, first \(versions.first ?? 0), last \(versions.last ?? 0)")
        #expect(versions.first == 1 && versions.last == 1000)
        #expect(Set(versions).count == versions.count)
    }

    @Test("a post in another process wakes this process's consumer promptly (well under the 20 ms poll)")
    func wakeUpAcrossProcesses() throws {
        let dir = TemporaryDirectory("sig-wake")
        let signal = SignalID()
        let center = try SignalCenter.open(path: dir.path, processIdentity: "consumer", configuration: .init(pollInterval: .seconds(5)))
        let consumer = try center.register(signal, owner: "o")
        let received = Received()
        center.attach(consumer, handler: .atMostOnce { delivery in received.append(delivery.version) })
        let poster = try ChildProcess(["signal-post", dir.path, signal.description, "3", "200000"], mergeStandardError: true)
        // With a 5 s poll, only the wake-up channel can deliver these within the deadline.
        #expect(eventually(timeout: .seconds(3)) { received.all == [1, 2, 3] })
        #expect(poster.readLine() == "posted 3")
        try poster.waitForExit()
    }
}
