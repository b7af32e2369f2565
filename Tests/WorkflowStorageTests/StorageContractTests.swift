import Testing
import WorkflowStorage

/// What every ``StorageBackend`` promises, checked through the protocol alone.
@Suite("Storage contract: instances, claims, commits, reads, snapshots (every backend)")
struct StorageContractTests {
    @Test("a new instance holds its first entries, its key and its fields; a taken id is refused", arguments: BackendKind.allCases)
    func createAndRead(kind: BackendKind) throws {
        let fresh = try kind.make(), backend = fresh.backend
        let created = try #require(try backend.create(Records.new("order-1", entries: 3, claim: Records.hostA)))
        #expect(created.id == "order-1" && created.workflowType == "Test.Flow" && created.codec == "binary")
        #expect(created.status == .running && created.created == 1_000 && created.updated == 1_000)
        #expect(created.lastSequence == 3 && created.lastSnapshot == 0 && created.claim == Records.hostA)
        #expect(try backend.instance(id: "order-1") == created)
        #expect(try backend.texts(created.key) == ["1:entry 1", "2:entry 2", "3:entry 3"])
        #expect(try backend.create(Records.new("order-1")) == nil)
        let other = try #require(try backend.create(Records.new("order-2")))
        #expect(other.key != created.key)
        #expect(try backend.instance(id: "missing") == nil)
    }

    @Test("a new instance's log must start at sequence 1", arguments: BackendKind.allCases)
    func createNeedsFirstSequence(kind: BackendKind) throws {
        let fresh = try kind.make()
        var new = Records.new("x")
        new.entries = Records.range(2, 3)
        expect(failsWith: .invalidInput) { try fresh.backend.create(new) }
        #expect(try fresh.backend.instance(id: "x") == nil)
    }

    @Test("instances and their ids are listed in id order", arguments: BackendKind.allCases)
    func listing(kind: BackendKind) throws {
        let fresh = try kind.make()
        for id in ["c", "a", "b"] { _ = try fresh.backend.create(Records.new(id)) }
        #expect(try fresh.backend.instances().map(\.id) == ["a", "b", "c"])
        #expect(try fresh.backend.instanceIDs() == ["a", "b", "c"])
    }

    @Test("a page of the listing: up to a limit, in byte order, after an id (whether or not it exists); the pages cover every instance once",
          arguments: BackendKind.allCases)
    func listingPages(kind: BackendKind) throws {
        let fresh = try kind.make()
        // Byte order, not a locale's: "B" < "a" < "b" < "é" (0xC3 0xA9).
        let ids = ["b", "a", "é", "B", "a/1", "a-2", "c d", "zz"]
        for id in ids { _ = try fresh.backend.create(Records.new(id)) }
        let ordered = ids.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(try fresh.backend.instances(after: nil, limit: 100).map(\.id) == ordered)
        var pages: [[String]] = []
        var after: String?
        while true {
            let page = try fresh.backend.instances(after: after, limit: 3).map(\.id)
            if page.isEmpty { break }
            pages.append(page)
            after = page.last
        }
        #expect(pages.map(\.count) == [3, 3, 2])
        #expect(pages.joined().map { $0 } == ordered)
        #expect(try fresh.backend.instances(after: "a0", limit: 2).map(\.id) == ["b", "c d"])
        #expect(try fresh.backend.instances(after: "zz", limit: 2).map(\.id) == ["é"])
        #expect(try fresh.backend.instances(after: "é", limit: 2).isEmpty)
        #expect(try fresh.backend.instances(after: nil, limit: 0).isEmpty)
        // A page reads what instance(id:) reads.
        for instance in try fresh.backend.instances(after: nil, limit: 100) { #expect(try fresh.backend.instance(id: instance.id) == instance) }
    }

    @Test("the summary counts instances by status and finds the oldest time of last change among the running ones, as the listing reads them",
          arguments: BackendKind.allCases)
    func summary(kind: BackendKind) throws {
        let fresh = try kind.make()
        #expect(try fresh.backend.instanceSummary() == InstanceSummary())
        for (index, id) in ["a", "b", "c", "d", "e"].enumerated() {
            _ = try fresh.backend.create(Records.new(id, created: 1_000 + Int64(index)))
        }
        _ = try fresh.backend.setStatus(id: "a", to: .completed, at: 5_000, failure: nil)
        _ = try fresh.backend.setStatus(id: "b", to: .failed, at: 5_000, failure: "corruptEntry: x")
        _ = try fresh.backend.setStatus(id: "c", to: .paused, at: 5_000, failure: nil)
        let summary = try fresh.backend.instanceSummary()
        #expect(summary.counts == [.completed: 1, .failed: 1, .paused: 1, .running: 2], "\(summary)")
        #expect(summary.total == 5)
        // d and e run, created at 1,003 and 1,004, unchanged since.
        #expect(summary.oldestRunningUpdate == 1_003)
        var listed = InstanceSummary()
        for instance in try fresh.backend.instances() { listed.add(instance) }
        #expect(listed == summary)
    }

    @Test("an id no instance can have (longer than the store's keys) reads as no instance, not as a failure", arguments: BackendKind.allCases)
    func idTooLong(kind: BackendKind) throws {
        let fresh = try kind.make()
        #expect(try fresh.backend.instance(id: String(repeating: "x", count: 5_000)) == nil)
        #expect(try fresh.backend.instances(after: String(repeating: "x", count: 5_000), limit: 10).isEmpty)
    }

    @Test("a claim is given when the instance is free or its holder may be taken over, and refused otherwise", arguments: BackendKind.allCases)
    func claims(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("i"))
        guard case .claimed(let first) = try backend.claim(id: "i", as: Records.hostA, takingOverIf: { _ in false }) else {
            Issue.record("a free instance must be given")
            return
        }
        #expect(first.claim == Records.hostA)
        #expect(try backend.claim(id: "i", as: Records.hostB, takingOverIf: { _ in false }) == .held(by: Records.hostA))
        var asked: [InstanceClaim] = []
        let taken = try backend.claim(id: "i", as: Records.hostB, takingOverIf: { asked.append($0); return true })
        #expect(asked == [Records.hostA])
        #expect(try backend.instance(id: "i")?.claim == Records.hostB)
        guard case .claimed = taken else {
            Issue.record("a holder the caller lets go of is taken over")
            return
        }
        #expect(try backend.claim(id: "nobody", as: Records.hostA, takingOverIf: { _ in true }) == .notFound)
    }

    @Test("release clears only the claim that holds the instance", arguments: BackendKind.allCases)
    func release(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("i", claim: Records.hostA))
        try backend.release(id: "i", claim: Records.hostB)
        #expect(try backend.instance(id: "i")?.claim == Records.hostA)
        try backend.release(id: "i", claim: Records.hostA)
        #expect(try backend.instance(id: "i")?.claim == InstanceClaim.none)
        try backend.release(id: "missing", claim: Records.hostA)
    }

    @Test("a commit appends entries and snapshots and updates the index; reads return exactly the bytes", arguments: BackendKind.allCases)
    func commitAppends(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let created = try #require(try backend.create(Records.new("i", claim: Records.hostA)))
        var changes = InstanceChanges(id: "i", key: created.key, claim: Records.hostA, entries: Records.range(2, 5), updated: 5_000)
        changes.snapshots = [(sequence: 4, bytes: [4, 4])]
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [changes]))
        #expect(outcomes == [.committed])
        let stored = try #require(try backend.instance(id: "i"))
        #expect(stored.lastSequence == 5 && stored.updated == 5_000 && stored.lastSnapshot == 4 && stored.claim == Records.hostA)
        #expect(stored.workflowType == created.workflowType && stored.codec == created.codec && stored.created == created.created)
        #expect(try backend.texts(created.key, from: 2, through: 4) == ["2:entry 2", "3:entry 3", "4:entry 4"])
        #expect(try backend.texts(created.key).count == 5)
        #expect(try backend.snapshotSequences(created.key) == [4])
        // A visit that returns false ends the read.
        var visited = 0
        try backend.readEntries(of: created.key, from: 1, through: 5) { _, _ in
            visited += 1
            return visited < 2
        }
        #expect(visited == 2)
    }

    @Test("one commit carries many instances; one whose claim is not the stored one is refused alone, with nothing written", arguments: BackendKind.allCases)
    func commitRefusesStaleClaim(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostB)))
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 3), updated: 2),
            // Made under host A's claim, but host B holds the instance.
            InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(2, 3), updated: 2),
        ]))
        #expect(outcomes.count == 2)
        #expect(outcomes == [.committed, .refused(current: Records.hostB)])
        #expect(try backend.instance(id: "a")?.lastSequence == 3)
        #expect(try backend.texts(b.key) == ["1:entry 1"])
        #expect(try backend.instance(id: "b")?.lastSequence == 1)
        #expect(try backend.texts(a.key).count == 3)
    }

    @Test("each instance of a commit gets its own outcome, in the order the request lists them, whatever the store's order", arguments: BackendKind.allCases)
    func outcomesFollowTheRequest(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let created = try (0..<12).map { try #require(try backend.create(Records.new("i\($0)", claim: Records.hostA))) }
        // Listed newest first, each with a different number of entries, one of them under a claim
        // that does not hold it (so the store also says why it was not written).
        let listed = Array(created.reversed())
        let changes = listed.enumerated().map { place, instance in
            InstanceChanges(id: instance.id, key: instance.key, claim: place == 5 ? Records.hostB : Records.hostA,
                            entries: Records.range(2, UInt64(2 + place)), updated: Int64(10 + place))
        }
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: changes))
        try #require(outcomes.count == listed.count)
        for (place, instance) in listed.enumerated() {
            if place == 5 {
                #expect(outcomes[place] == .refused(current: Records.hostA), "\(instance.id)")
                #expect(try backend.instance(id: instance.id)?.lastSequence == 1)
                continue
            }
            #expect(outcomes[place] == .committed, "\(instance.id) must commit")
            let stored = try #require(try backend.instance(id: instance.id))
            #expect(stored.key == instance.key)
            #expect(stored.lastSequence == UInt64(2 + place) && stored.updated == Int64(10 + place))
        }
    }

    @Test("a commit pulls its further parts until none is left and applies all of them as one: an outcome per change of every part, in order; a refusal in a later part stays alone", arguments: BackendKind.allCases)
    func commitPullsParts(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let created = try (0..<6).map { try #require(try backend.create(Records.new("i\($0)", claim: Records.hostA))) }
        func changes(_ index: Int, claim: InstanceClaim = Records.hostA) -> InstanceChanges {
            InstanceChanges(id: created[index].id, key: created[index].key, claim: claim, entries: Records.range(2, UInt64(2 + index)), updated: 5)
        }
        // The second part's second instance was changed under a claim that does not hold it.
        var parts = [
            CommitRequest(durability: .processCrashSafe, changes: [changes(2), changes(3, claim: Records.hostB)]),
            CommitRequest(durability: .synced, changes: [changes(4)]),
            CommitRequest(durability: .processCrashSafe, changes: [changes(5)]),
        ]
        var asked = 0
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [changes(1), changes(0)])) {
            asked += 1
            return parts.isEmpty ? nil : parts.removeFirst()
        }
        #expect(asked == 4, "each part is asked for once, and once more to hear that none is left")
        try #require(outcomes.count == 6)
        for (place, index) in [1, 0, 2, 3, 4, 5].enumerated() {
            if index == 3 {
                #expect(outcomes[place] == .refused(current: Records.hostA))
                #expect(try backend.texts(created[3].key) == ["1:entry 1"])
                continue
            }
            #expect(outcomes[place] == .committed, "i\(index) must commit")
            #expect(try backend.instance(id: "i\(index)")?.lastSequence == UInt64(2 + index))
            #expect(try backend.texts(created[index].key).count == 2 + index)
        }
    }

    @Test("a commit with a pulled part that leaves a gap fails as a whole: nothing of any part is written", arguments: BackendKind.allCases)
    func pulledCommitIsAtomic(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostA)))
        var gap: CommitRequest? = CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(3, 4), updated: 2)
        ])
        expect(failsWith: .invalidInput) {
            try backend.commit(CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 2)
            ])) {
                defer { gap = nil }
                return gap
            }
        }
        #expect(try backend.texts(a.key) == ["1:entry 1"])
        #expect(try backend.instance(id: "a")?.lastSequence == 1)
        #expect(try backend.texts(b.key) == ["1:entry 1"])
    }

    @Test("readTail returns the newest snapshot at or below a sequence and up to a limit of entries after it", arguments: BackendKind.allCases)
    func readsTail(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let created = try #require(try backend.create(Records.new("i", entries: 20, claim: Records.hostA)))
        let plain = try #require(try backend.create(Records.new("plain", entries: 4, claim: Records.hostA)))
        try backend.putSnapshot(id: "i", sequence: 5, bytes: [5])
        try backend.putSnapshot(id: "i", sequence: 12, bytes: [12, 12])
        func texts(_ records: LogRecords) -> [String] {
            var found: [String] = []
            records.forEach { sequence, bytes in found.append("\(sequence):" + String(decoding: bytes, as: UTF8.self)) }
            return found
        }

        let whole = try backend.readTail(of: created.key, through: 20, limit: 100)
        #expect(whole.snapshot == LogTail.Snapshot(sequence: 12, bytes: [12, 12]))
        #expect(texts(whole.entries) == (13...20).map { "\($0):entry \($0)" })
        let earlier = try backend.readTail(of: created.key, through: 10, limit: 100)
        #expect(earlier.snapshot == LogTail.Snapshot(sequence: 5, bytes: [5]))
        #expect(texts(earlier.entries) == (6...10).map { "\($0):entry \($0)" })
        let limited = try backend.readTail(of: created.key, through: 20, limit: 3)
        #expect(limited.entries.firstSequence == 13 && texts(limited.entries) == ["13:entry 13", "14:entry 14", "15:entry 15"])
        let atSnapshot = try backend.readTail(of: created.key, through: 12, limit: 100)
        #expect(atSnapshot.snapshot?.sequence == 12 && atSnapshot.entries.isEmpty && atSnapshot.entries.firstSequence == 13)

        let none = try backend.readTail(of: plain.key, through: 4, limit: 100)
        #expect(none.snapshot == nil)
        #expect(texts(none.entries) == ["1:entry 1", "2:entry 2", "3:entry 3", "4:entry 4"])
        #expect(try backend.readTail(of: plain.key, through: 4, limit: 0).entries.isEmpty)
    }

    @Test("a commit whose entries leave a gap fails as a whole: no instance in it is written", arguments: BackendKind.allCases)
    func commitIsAtomic(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostA)))
        expect(failsWith: .invalidInput) {
            try backend.commit(CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 2),
                InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(3, 4), updated: 2),
            ]))
        }
        #expect(try backend.texts(a.key) == ["1:entry 1"])
        #expect(try backend.instance(id: "a")?.lastSequence == 1)
        #expect(try backend.texts(b.key) == ["1:entry 1"])
    }

    @Test("a commit to a deleted instance is refused with no current claim", arguments: BackendKind.allCases)
    func commitToDeleted(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        #expect(try backend.delete(id: "a"))
        let outcomes = try backend.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 2)
        ]))
        #expect(outcomes == [.refused(current: nil)])
        #expect(try backend.instance(id: "a") == nil)
    }

    @Test("processCrashSafe commits are readable at once and made durable by sync", arguments: BackendKind.allCases)
    func durabilityModes(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", claim: Records.hostA)))
        for (index, durability) in [CommitDurability.processCrashSafe, .synced].enumerated() {
            let sequence = UInt64(index + 2)
            _ = try backend.commit(CommitRequest(durability: durability, changes: [
                InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(sequence, sequence), updated: 2)
            ]))
        }
        backend.syncPeriodically(every: .milliseconds(50))
        try backend.sync()
        #expect(try backend.texts(a.key) == ["1:entry 1", "2:entry 2", "3:entry 3"])
    }

    @Test("snapshots are read newest first at or below a sequence; a tool's snapshot raises lastSnapshot only when newer", arguments: BackendKind.allCases)
    func snapshots(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", entries: 1, claim: Records.hostA)))
        var changes = InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 30), updated: 2)
        changes.snapshots = [(10, [1]), (20, [2])]
        _ = try backend.commit(CommitRequest(durability: .synced, changes: [changes]))
        // Another instance's snapshots are never visited.
        let b = try #require(try backend.create(Records.new("b", claim: Records.hostA)))
        try backend.putSnapshot(id: "b", sequence: 1, bytes: [9])
        #expect(try backend.snapshotSequences(a.key) == [20, 10])
        #expect(try backend.snapshotSequences(a.key, atMost: 19) == [10])
        #expect(try backend.snapshotSequences(a.key, atMost: 9) == [])
        try backend.putSnapshot(id: "a", sequence: 15, bytes: [3])
        #expect(try backend.instance(id: "a")?.lastSnapshot == 20)
        try backend.putSnapshot(id: "a", sequence: 30, bytes: [4])
        #expect(try backend.instance(id: "a")?.lastSnapshot == 30)
        #expect(try backend.snapshotSequences(a.key) == [30, 20, 15, 10])
        #expect(try backend.snapshotSequences(b.key) == [1])
        expect(failsWith: .notFound) { try backend.putSnapshot(id: "missing", sequence: 1, bytes: []) }
    }

    @Test("status changes keep the log and the claim", arguments: BackendKind.allCases)
    func status(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("a", entries: 4, claim: Records.hostA))
        let updated = try #require(try backend.setStatus(id: "a", to: .completed, at: 9_000))
        #expect(updated.status == .completed && updated.updated == 9_000 && updated.lastSequence == 4 && updated.claim == Records.hostA)
        #expect(try backend.instance(id: "a") == updated)
        #expect(try backend.setStatus(id: "missing", to: .failed, at: 1) == nil)
    }

    @Test("delete removes an instance's index record, log and snapshots, and nothing of another", arguments: BackendKind.allCases)
    func delete(kind: BackendKind) throws {
        let backend = try kind.make().backend
        let a = try #require(try backend.create(Records.new("a", entries: 3)))
        let b = try #require(try backend.create(Records.new("b", entries: 2)))
        try backend.putSnapshot(id: "a", sequence: 2, bytes: [1])
        try backend.putSnapshot(id: "b", sequence: 2, bytes: [1])
        #expect(try backend.delete(id: "a"))
        #expect(try backend.delete(id: "a") == false)
        #expect(try backend.instance(id: "a") == nil)
        #expect(try backend.texts(a.key) == [])
        #expect(try backend.snapshotSequences(a.key) == [])
        #expect(try backend.texts(b.key) == ["1:entry 1", "2:entry 2"])
        #expect(try backend.snapshotSequences(b.key) == [2])
        #expect(try backend.instanceIDs() == ["b"])
    }

    @Test("statistics count instances, entries and snapshots; a structure check of an intact store finds nothing", arguments: BackendKind.allCases)
    func statistics(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("a", entries: 3))
        _ = try backend.create(Records.new("b", entries: 2))
        try backend.putSnapshot(id: "b", sequence: 2, bytes: [1])
        let statistics = try backend.statistics()
        #expect(statistics.backend == backend.name)
        #expect(statistics.instances == 2 && statistics.logEntries == 5 && statistics.snapshots == 1)
        #expect(backend.checkStructure(progress: { _ in }).isEmpty)
    }

    @Test("commits from many threads at once each land whole, in order per instance", arguments: BackendKind.allCases)
    func concurrentCommits(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let backend = fresh.backend
        var keys: [UInt64] = []
        for index in 0..<8 { keys.append(try #require(try backend.create(Records.new("i\(index)", claim: Records.hostA))).key) }
        await withTaskGroup(of: Void.self) { group in
            for (index, key) in keys.enumerated() {
                group.addTask {
                    for sequence in UInt64(2)...51 {
                        _ = try? backend.commit(CommitRequest(durability: .processCrashSafe, changes: [
                            InstanceChanges(id: "i\(index)", key: key, claim: Records.hostA, entries: Records.range(sequence, sequence), updated: 1)
                        ]))
                    }
                }
            }
        }
        for key in keys {
            #expect(try backend.texts(key) == (1...51).map { "\($0):entry \($0)" })
        }
    }

    @Test("a closed store fails every call with kind closed and closes again harmlessly; a durable one opened again holds what was committed",
          arguments: BackendKind.allCases)
    func closed(kind: BackendKind) throws {
        let fresh = try kind.make()
        let backend = fresh.backend
        let created = try #require(try backend.create(Records.new("i", entries: 2, claim: Records.hostA)))
        let signals = try backend.signalStorage()
        backend.close()
        backend.close()
        let next = InstanceChanges(id: "i", key: created.key, claim: Records.hostA, entries: Records.range(3, 3), updated: 3)
        expect(failsWith: .closed) { try backend.commit(CommitRequest(durability: .synced, changes: [next])) }
        expect(failsWith: .closed) { try backend.create(Records.new("j")) }
        expect(failsWith: .closed) { try backend.instance(id: "i") }
        expect(failsWith: .closed) { try backend.instances() }
        expect(failsWith: .closed) { try backend.claim(id: "i", as: Records.hostB) { _ in true } }
        expect(failsWith: .closed) { try backend.release(id: "i", claim: Records.hostA) }
        expect(failsWith: .closed) { try backend.setStatus(id: "i", to: .cancelled, at: 4) }
        expect(failsWith: .closed) { try backend.texts(created.key) }
        expect(failsWith: .closed) { try backend.snapshotSequences(created.key) }
        expect(failsWith: .closed) { try backend.putSnapshot(id: "i", sequence: 2, bytes: [2]) }
        expect(failsWith: .closed) { try backend.statistics() }
        expect(failsWith: .closed) { try backend.sync() }
        expect(failsWith: .closed) { try backend.delete(id: "i") }
        expect(failsWith: .closed) { try signals.signals() }
        expect(failsWith: .closed) { try backend.signalStorage().consumers() }
        guard let reopen = fresh.reopen else { return }
        let again = try reopen()
        defer { again.close() }
        #expect(try again.instance(id: "i")?.claim == Records.hostA)
        #expect(try again.texts(created.key) == ["1:entry 1", "2:entry 2"])
        // The store opened again is another host: it claims the instance before it commits (on
        // PostgreSQL a commit is fenced by the host that holds the instance, and the closed one left).
        guard case .claimed(let claimed) = try again.claim(id: "i", as: Records.hostB, takingOverIf: { _ in true }) else {
            Issue.record("the store opened again could not claim the instance")
            return
        }
        #expect(claimed.lastSequence == 2)
        var further = next
        further.claim = Records.hostB
        #expect(try again.commit(CommitRequest(durability: .synced, changes: [further])) == [.committed])
        #expect(try again.texts(created.key).count == 3)
    }
}

/// Expects `body` to throw a ``StorageFailure`` of `kind`.
func expect(failsWith kind: StorageFailure.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> some Any) {
    do {
        _ = try body()
        Issue.record("expected a \(kind) failure, nothing was thrown", sourceLocation: sourceLocation)
    } catch let failure as StorageFailure {
        #expect(failure.kind == kind, "\(failure)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a StorageFailure, got \(error)", sourceLocation: sourceLocation)
    }
}
