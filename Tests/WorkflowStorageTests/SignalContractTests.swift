import Foundation
import Synchronization
import Testing
import WorkflowLocks
import WorkflowStorage

/// What every backend's ``SignalStorage`` promises (rules S1-S7), checked through the protocol alone.
@Suite("Storage contract: signals, consumers, marks, application tables, change feed (every backend)")
struct SignalContractTests {
    static func post(_ signal: UUID, _ text: String, terminates: Bool = false, key: String? = nil) -> SignalPostRecord {
        SignalPostRecord(signal: signal, payload: Array(text.utf8), terminates: terminates, idempotencyKey: key)
    }

    static func consumer(
        _ signal: UUID, id: UUID = UUID(), behaviour: DeliveryBehaviour = .untilTerminated, coalescing: Coalescing = .everyVersion,
        scope: ConsumerScope = .durable, run: String = "run-1"
    ) -> ConsumerRecord {
        ConsumerRecord(id: id, signal: signal, owner: "test", runID: run, processIdentity: "tests", processID: 42, processStartTime: 7,
                       behaviour: behaviour, coalescing: coalescing, scope: scope, lastDelivered: 0, created: 5)
    }

    static func mark(_ consumer: UUID, _ version: UInt64, terminates: Bool = false, keepLatest: Int = 1) -> DeliveryMarkRecord {
        DeliveryMarkRecord(consumer: consumer, version: version, terminates: terminates, keepLatest: keepLatest)
    }

    @Test("posts append dense versions per signal, in one transaction per batch; an unknown signal has no versions", arguments: BackendKind.allCases)
    func posting(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let a = UUID(), b = UUID()
        _ = try signals.register(Self.consumer(a), at: 1)
        _ = try signals.register(Self.consumer(b), at: 1)
        #expect(try signals.post([Self.post(a, "a1"), Self.post(b, "b1"), Self.post(a, "a2")], keepLatest: 1, at: 10, durability: nil) == [1, 1, 2])
        #expect(try signals.post([Self.post(a, "a3")], keepLatest: 1, at: 20, durability: .processCrashSafe) == [3])
        let versions = try #require(try signals.versions(of: a))
        #expect(versions.map(\.version) == [1, 2, 3])
        #expect(versions.map { String(decoding: $0.payload, as: UTF8.self) } == ["a1", "a2", "a3"])
        #expect(versions.map(\.posted) == [10, 10, 20])
        #expect(try signals.versions(of: UUID()) == nil)
        let summary = try #require(try signals.signals().first { $0.id == a })
        #expect(summary.latestVersion == 3 && summary.retainedVersions == [1, 2, 3] && summary.consumers == 1)
        #expect(summary.created == 1 && summary.updated == 20)
    }

    @Test("a version keeps its poster's trace context, returned by reads and by the next delivery", arguments: BackendKind.allCases)
    func traceContext(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal)
        _ = try signals.register(consumer, at: 1)
        var traced = Self.post(signal, "traced")
        traced.traceContext = TraceContext(["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "é=1"])
        #expect(try signals.post([Self.post(signal, "plain"), traced], keepLatest: 2, at: 10, durability: nil) == [1, 2])
        let versions = try #require(try signals.versions(of: signal))
        #expect(versions.map(\.traceContext) == [TraceContext(), traced.traceContext])
        #expect(versions.map { String(decoding: $0.payload, as: UTF8.self) } == ["plain", "traced"])
        try signals.mark(Self.mark(consumer.id, 1), durability: nil)
        let next = try #require(try signals.nextDelivery(for: consumer.id))
        #expect(next.version.version == 2 && next.version.traceContext == traced.traceContext)
        #expect(String(decoding: next.version.payload, as: UTF8.self) == "traced")
    }

    @Test("a post with an idempotency key already used appends nothing and returns the first post's version", arguments: BackendKind.allCases)
    func idempotency(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID()
        _ = try signals.register(Self.consumer(signal), at: 1)
        #expect(try signals.post([Self.post(signal, "first", key: "k")], keepLatest: 1, at: 1, durability: nil) == [1])
        #expect(try signals.post([Self.post(signal, "other")], keepLatest: 1, at: 2, durability: nil) == [2])
        #expect(try signals.post([Self.post(signal, "again", key: "k")], keepLatest: 1, at: 3, durability: nil) == [1])
        #expect(try signals.versions(of: signal)?.map(\.version) == [1, 2])
    }

    @Test("a signal's stable name is kept once its record exists, is not replaced, and goes with the record", arguments: BackendKind.allCases)
    func stableNames(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let waited = UUID(), posted = UUID(), unknown = UUID()
        let consumer = Self.consumer(waited)
        _ = try signals.register(consumer, at: 1)
        _ = try signals.post([Self.post(posted, "p")], keepLatest: 1, at: 2, durability: nil)
        try signals.nameSignals([waited: "shipment:order-7", posted: "settlement:pay-3", unknown: "never:made"])
        #expect(try signals.signalNames() == [waited: "shipment:order-7", posted: "settlement:pay-3"])
        try signals.nameSignals([waited: "another name"])
        #expect(try signals.signalNames()[waited] == "shipment:order-7")
        // The last consumer's removal takes the record, and its name with it.
        #expect(try signals.removeConsumer(consumer.id))
        #expect(try signals.signalNames() == [posted: "settlement:pay-3"])
        _ = try signals.register(Self.consumer(waited), at: 3)
        try signals.nameSignals([waited: "shipment:order-7 again"])
        #expect(try signals.signalNames()[waited] == "shipment:order-7 again")
    }

    @Test("registering creates the signal's record; a second registration of an id changes nothing", arguments: BackendKind.allCases)
    func registration(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal, behaviour: .once, coalescing: .latestOnly, scope: .run)
        #expect(try signals.register(consumer, at: 3))
        var changed = consumer
        changed.owner = "someone else"
        #expect(try !signals.register(changed, at: 4))
        #expect(try signals.consumer(consumer.id) == consumer)
        #expect(try signals.consumers() == [consumer])
        #expect(try signals.versions(of: signal) == [])
        #expect(try signals.signals().map(\.latestVersion) == [0])
        #expect(try signals.consumer(UUID()) == nil)
    }

    @Test("a consumer is handed each version after its position, in order, until marked up to date", arguments: BackendKind.allCases)
    func nextDeliveries(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal), latest = Self.consumer(signal, coalescing: .latestOnly)
        _ = try signals.register(consumer, at: 1)
        _ = try signals.register(latest, at: 1)
        #expect(try signals.nextDelivery(for: consumer.id) == nil)
        _ = try signals.post((1...3).map { Self.post(signal, "v\($0)") }, keepLatest: 1, at: 2, durability: nil)
        var seen: [UInt64] = []
        while let next = try signals.nextDelivery(for: consumer.id) {
            #expect(next.consumer.id == consumer.id && next.consumer.lastDelivered == seen.last ?? 0)
            seen.append(next.version.version)
            try signals.mark(Self.mark(consumer.id, next.version.version), durability: nil)
        }
        #expect(seen == [1, 2, 3])
        // `.latestOnly` skips to the newest.
        #expect(try signals.nextDelivery(for: latest.id)?.version.version == 3)
        #expect(try signals.nextDelivery(for: UUID()) == nil)
    }

    @Test("a mark only moves a position forward, so it never applies twice", arguments: BackendKind.allCases)
    func marksMoveForward(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal)
        _ = try signals.register(consumer, at: 1)
        _ = try signals.post((1...3).map { Self.post(signal, "v\($0)") }, keepLatest: 3, at: 2, durability: nil)
        try signals.mark(Self.mark(consumer.id, 2), durability: nil)
        try signals.mark(Self.mark(consumer.id, 1), durability: nil)
        try signals.mark(Self.mark(consumer.id, 2), durability: nil)
        #expect(try signals.consumer(consumer.id)?.lastDelivered == 2)
        try signals.mark(Self.mark(UUID(), 1), durability: nil)  // a gone consumer: nothing happens
    }

    @Test("a .once consumer goes with its mark, any consumer with a terminating version, and the record with its last consumer", arguments: BackendKind.allCases)
    func removalRules(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), once = Self.consumer(signal, behaviour: .once), until = Self.consumer(signal)
        _ = try signals.register(once, at: 1)
        _ = try signals.register(until, at: 1)
        _ = try signals.post([Self.post(signal, "v1"), Self.post(signal, "v2", terminates: true)], keepLatest: 1, at: 2, durability: nil)
        try signals.mark(Self.mark(once.id, 1), durability: nil)
        #expect(try signals.consumer(once.id) == nil)
        try signals.mark(Self.mark(until.id, 1), durability: nil)
        #expect(try signals.consumer(until.id)?.lastDelivered == 1)
        try signals.mark(Self.mark(until.id, 2, terminates: true), durability: nil)
        #expect(try signals.consumer(until.id) == nil)
        #expect(try signals.versions(of: signal) == nil)
        #expect(try signals.signals().isEmpty)
        // Removing the last consumer directly removes the record too.
        let other = UUID(), alone = Self.consumer(other)
        _ = try signals.register(alone, at: 1)
        _ = try signals.post([Self.post(other, "x")], keepLatest: 1, at: 2, durability: nil)
        #expect(try signals.removeConsumer(alone.id))
        #expect(try !signals.removeConsumer(alone.id))
        #expect(try signals.versions(of: other) == nil)
    }

    @Test("versions every consumer has are pruned, except the newest keepLatest", arguments: BackendKind.allCases)
    func retention(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), fast = Self.consumer(signal), slow = Self.consumer(signal)
        _ = try signals.register(fast, at: 1)
        _ = try signals.register(slow, at: 1)
        _ = try signals.post((1...5).map { Self.post(signal, "v\($0)") }, keepLatest: 1, at: 2, durability: nil)
        try signals.mark(Self.mark(fast.id, 5), durability: nil)
        #expect(try signals.versions(of: signal)?.map(\.version) == [1, 2, 3, 4, 5])  // the slow one needs them
        try signals.mark(Self.mark(slow.id, 3), durability: nil)
        #expect(try signals.versions(of: signal)?.map(\.version) == [4, 5])
        try signals.mark(Self.mark(slow.id, 5, keepLatest: 2), durability: nil)
        #expect(try signals.versions(of: signal)?.map(\.version) == [4, 5])
        try signals.mark(Self.mark(slow.id, 5), durability: nil)
        _ = try signals.post([Self.post(signal, "v6")], keepLatest: 1, at: 3, durability: nil)
        #expect(try signals.versions(of: signal)?.map(\.version) == [6])
    }

    @Test("removeConsumers(where:) removes every match in one transaction", arguments: BackendKind.allCases)
    func removeMatching(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID()
        let doomed = (0..<3).map { _ in Self.consumer(signal, scope: .run, run: "dead") }, kept = Self.consumer(signal, run: "live")
        for consumer in doomed + [kept] { _ = try signals.register(consumer, at: 1) }
        #expect(try signals.removeConsumers { $0.runID == "dead" } == 3)
        #expect(try signals.consumers().map(\.id) == [kept.id])
        #expect(try signals.signals().first?.consumers == 1)
    }

    @Test("a transactional delivery commits the handler's table writes with the mark, or neither", arguments: BackendKind.allCases)
    func transactionalDelivery(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal)
        let table = try signals.table(named: "app.received")
        _ = try signals.register(consumer, at: 1)
        _ = try signals.post([Self.post(signal, "v1"), Self.post(signal, "v2")], keepLatest: 1, at: 2, durability: nil)

        struct HandlerFailed: Error {}
        #expect(throws: HandlerFailed.self) {
            try signals.deliver(Self.mark(consumer.id, 1), durability: nil) { txn in
                try txn.put([1], forKey: [1], in: table)
                throw HandlerFailed()
            }
        }
        #expect(try signals.entries(in: table).isEmpty)
        #expect(try signals.consumer(consumer.id)?.lastDelivered == 0)

        let kept = Lock<(any StorageTransaction)?>(nil)
        let delivered = try signals.deliver(Self.mark(consumer.id, 1), durability: .synced) { txn in
            #expect(try txn.insert([1], forKey: [1], in: table))
            #expect(try !txn.insert([9], forKey: [1], in: table))
            try txn.put([2], forKey: [2], in: table)
            #expect(try txn.value(forKey: [2], in: table) == [2])
            #expect(try txn.delete([2], in: table))
            #expect(try txn.value(forKey: [2], in: table) == nil)
            kept.withLock { $0 = txn }
        }
        #expect(delivered)
        #expect(try signals.entries(in: table).map(\.key) == [[1]])
        #expect(try signals.consumer(consumer.id)?.lastDelivered == 1)
        // A transaction used after its handler returned fails, and writes nothing.
        let late = try #require(kept.withLock { $0 })
        expect(failsWith: .invalidInput) { try late.put([3], forKey: [3], in: table) }
        #expect(try signals.entries(in: table).count == 1)

        // Already delivered: the handler does not run.
        var ran = false
        #expect(try !signals.deliver(Self.mark(consumer.id, 1), durability: nil) { _ in ran = true })
        #expect(!ran)
    }

    @Test("delivery marks in a commit apply with its entries, and not for a refused instance or a failed commit", arguments: BackendKind.allCases)
    func marksInCommits(kind: BackendKind) throws {
        let fresh = try kind.make(), backend = fresh.backend, signals = try backend.signalStorage()
        let signal = UUID(), mine = Self.consumer(signal), theirs = Self.consumer(signal)
        _ = try signals.register(mine, at: 1)
        _ = try signals.register(theirs, at: 1)
        _ = try signals.post([Self.post(signal, "v1"), Self.post(signal, "v2")], keepLatest: 1, at: 2, durability: nil)
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostB)))

        var changesA = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 3)
        changesA.deliveryMarks = [Self.mark(mine.id, 1)]
        var changesB = InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 3)
        changesB.deliveryMarks = [Self.mark(theirs.id, 1)]
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [changesA, changesB]))
        #expect(outcomes.count == 2)
        #expect(try signals.consumer(mine.id)?.lastDelivered == 1)
        #expect(try signals.consumer(theirs.id)?.lastDelivered == 0, "b's claim is hostB's: its mark is refused with it")

        var gap = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(5, 5), updated: 4)
        gap.deliveryMarks = [Self.mark(mine.id, 2)]
        expect(failsWith: .invalidInput) { try backend.commit(CommitRequest(durability: .synced, changes: [gap])) }
        #expect(try signals.consumer(mine.id)?.lastDelivered == 1)
    }

    @Test(
        "a commit whose delivery mark its consumer already has writes nothing of that instance (alreadyDelivered); the others in it are written",
        arguments: BackendKind.allCases
    )
    func markAlreadyMade(kind: BackendKind) throws {
        let fresh = try kind.make(), backend = fresh.backend, signals = try backend.signalStorage()
        let signal = UUID(), mine = Self.consumer(signal), other = Self.consumer(signal)
        _ = try signals.register(mine, at: 1)
        _ = try signals.register(other, at: 1)
        _ = try signals.post([Self.post(signal, "v1"), Self.post(signal, "v2")], keepLatest: 1, at: 2, durability: nil)
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostA)))
        var first = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 3)
        first.deliveryMarks = [Self.mark(mine.id, 1)]
        if case .committed = try backend.commit(CommitRequest(durability: .synced, changes: [first])).first {} else {
            Issue.record("the first delivery of version 1 must commit")
        }
        // Version 1 again, with the action it would apply a second time, beside another instance's changes.
        var again = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(3, 3), updated: 4)
        again.deliveryMarks = [Self.mark(mine.id, 1)]
        var others = InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 4)
        others.deliveryMarks = [Self.mark(other.id, 1)]
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [again, others]))
        #expect(outcomes.first == .alreadyDelivered(consumer: mine.id, version: 1))
        #expect(outcomes.last == .committed, "b must commit: \(outcomes)")
        #expect(try backend.instance(id: "b")?.lastSequence == 2)
        #expect(try backend.instance(id: "a")?.lastSequence == 2, "nothing of a's second delivery is written")
        #expect(try signals.consumer(other.id)?.lastDelivered == 1)
        // The next version is a new delivery.
        var next = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(3, 3), updated: 5)
        next.deliveryMarks = [Self.mark(mine.id, 2)]
        #expect(try backend.commit(CommitRequest(durability: .synced, changes: [next])) == [.committed], "version 2 must commit")
        #expect(try backend.instance(id: "a")?.lastSequence == 3)
        #expect(try signals.consumer(mine.id)?.lastDelivered == 2)
    }

    @Test("application tables keep their entries in key order and apart from each other", arguments: BackendKind.allCases)
    func tables(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID(), consumer = Self.consumer(signal)
        _ = try signals.register(consumer, at: 1)
        _ = try signals.post([Self.post(signal, "v1")], keepLatest: 1, at: 2, durability: nil)
        let first = try signals.table(named: "first"), second = try signals.table(named: "second")
        _ = try signals.deliver(Self.mark(consumer.id, 1), durability: nil) { txn in
            for key: UInt8 in [3, 1, 2] { try txn.put([key * 10], forKey: [key], in: first) }
            try txn.put([0], forKey: [9], in: second)
        }
        #expect(try signals.entries(in: first).map(\.key) == [[1], [2], [3]])
        #expect(try signals.entries(in: first).map(\.value) == [[10], [20], [30]])
        #expect(try signals.entries(in: signals.table(named: "second")).map(\.key) == [[9]])
    }

    @Test("the change feed's position grows with commits; announce wakes other subscribers, wakeSelf its own", arguments: BackendKind.allCases)
    func changeFeed(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let listener = signals.changeFeed(), poster = signals.changeFeed()
        let signal = UUID()
        _ = try signals.register(Self.consumer(signal), at: 1)
        let before = listener.position
        _ = try signals.post([Self.post(signal, "v1")], keepLatest: 1, at: 2, durability: nil)
        #expect(listener.position > before)
        #expect(!listener.wait(timeout: .milliseconds(10)))
        poster.announce()
        #expect(listener.wait(timeout: .seconds(5)))
        listener.wakeSelf()
        #expect(listener.wait(timeout: .seconds(5)))
        #expect(!poster.wait(timeout: .milliseconds(10)), "an announcement does not wake its own subscriber")
    }

    @Test("posts from 8 threads at once get dense, distinct versions", arguments: BackendKind.allCases)
    func concurrentPosts(kind: BackendKind) throws {
        let fresh = try kind.make(), signals = try fresh.backend.signalStorage()
        let signal = UUID()
        _ = try signals.register(Self.consumer(signal), at: 1)
        let versions = Lock<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<25 {
                let got = try? signals.post([Self.post(signal, "\(thread).\(index)")], keepLatest: 1, at: 2, durability: .processCrashSafe)
                versions.withLock { $0 += got ?? [] }
            }
        }
        #expect(versions.withLock { $0.sorted() } == Array(1...200))
        #expect(try signals.versions(of: signal)?.count == 200)
    }
}
