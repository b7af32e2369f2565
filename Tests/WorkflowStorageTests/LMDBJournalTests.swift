import Foundation
import LMDB
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowStorage

/// The LMDB backend's store-wide journal and its format migration, seen from inside the store.
@Suite("LMDB backend: the store-wide journal, checkpoints and the format migrations")
struct LMDBJournalTests {
    /// The entries in the journal, and those outside it (in `log` or archived in its segments).
    func counts(_ storage: LMDBStorage) throws -> (journal: Int, log: Int) {
        try storage.environment.read { txn in
            (try txn.count(of: storage.layout.journal),
             try txn.count(of: storage.layout.log) - storage.segmentCount(txn) + storage.archivedEntryCount(txn))
        }
    }

    /// The values in the archive (chunks, or format 5's single entries).
    func archiveValues(_ storage: LMDBStorage) throws -> Int {
        try storage.environment.read { txn in try txn.count(of: storage.layout.archive) }
    }

    /// Marks the store as written in format `version` (its `format` record in `meta`).
    func markFormat(_ version: UInt32, _ txn: borrowing WriteTransaction, in layout: StoreLayout) throws {
        try txn.put(withUnsafeBytes(of: version.littleEndian) { Array($0) }, forKey: "format", in: layout.meta)
    }

    /// Creates `count` instances held by host A; their keys.
    func instances(_ count: Int, in storage: LMDBStorage) throws -> [UInt64] {
        try (0..<count).map { try #require(try storage.create(Records.new("i\($0)", claim: Records.hostA))).key }
    }

    /// One commit carrying, for each instance, entries `first...last`; the first instance's id is
    /// `"i<from>"`, the next ones' follow.
    func commit(_ keys: [UInt64], _ first: UInt64, _ last: UInt64, in storage: LMDBStorage, from: Int = 0) throws {
        let outcomes = try storage.commit(CommitRequest(durability: .processCrashSafe, changes: keys.enumerated().map { index, key in
            InstanceChanges(id: "i\(from + index)", key: key, claim: Records.hostA, entries: Records.range(first, last), updated: Int64(last))
        }))
        #expect(outcomes.allSatisfy { if case .committed = $0 { true } else { false } })
    }

    @Test("a commit of many instances with few entries each appends to the journal; one of few instances, or many entries each, writes the log; an instance in the journal stays there until a checkpoint")
    func journalThenLog() throws {
        let dir = TemporaryDirectory("journal")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 3, in: storage)
        #expect(try counts(storage) == (journal: 2 * keys.count, log: keys.count))
        // Alone now, but it has entries in the journal: its next ones go there too.
        try commit([keys[0]], 4, 4, in: storage)
        #expect(try counts(storage).journal == 2 * keys.count + 1)
        // A new instance committing alone writes the log.
        let lone = try #require(try storage.create(Records.new("lone", claim: Records.hostA)))
        _ = try storage.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "lone", key: lone.key, claim: Records.hostA, entries: Records.range(2, 3), updated: 3)
        ]))
        #expect(try counts(storage) == (journal: 2 * keys.count + 1, log: keys.count + 3))
        // Reads merge the log's and the journal's entries, in order, from any start.
        #expect(try storage.texts(keys[0]) == ["1:entry 1", "2:entry 2", "3:entry 3", "4:entry 4"])
        #expect(try storage.texts(keys[0], from: 3, through: 3) == ["3:entry 3"])
        #expect(try storage.texts(keys[1], from: 2) == ["2:entry 2", "3:entry 3"])
        #expect(try storage.instance(id: "i0")?.lastSequence == 4)
        // Many instances, each with as many entries as the journal takes: all to the journal.
        let full = try (0..<LMDBStorage.journalFanIn).map { try #require(try storage.create(Records.new("f\($0)", claim: Records.hostA))).key }
        let most = UInt64(LMDBStorage.journalEntriesPerInstance)
        let beforeFull = try counts(storage)
        _ = try storage.commit(CommitRequest(durability: .synced, changes: full.enumerated().map { index, key in
            InstanceChanges(id: "f\(index)", key: key, claim: Records.hostA, entries: Records.range(2, most + 1), updated: 1)
        }))
        #expect(try counts(storage) == (journal: beforeFull.journal + full.count * Int(most), log: beforeFull.log))
        #expect(try storage.texts(full[3]).count == Int(most + 1))
        // Many instances, each with more entries than the journal takes: straight to the log.
        let others = try (0..<LMDBStorage.journalFanIn).map { try #require(try storage.create(Records.new("o\($0)", claim: Records.hostA))).key }
        let many = UInt64(LMDBStorage.journalEntriesPerInstance) + 2
        let before = try counts(storage)
        _ = try storage.commit(CommitRequest(durability: .synced, changes: others.enumerated().map { index, key in
            InstanceChanges(id: "o\(index)", key: key, claim: Records.hostA, entries: Records.range(2, many), updated: 1)
        }))
        #expect(try counts(storage) == (journal: before.journal, log: before.log + others.count * Int(many - 1)))
        #expect(try storage.texts(others[3]).count == Int(many))
    }

    @Test("releasing instances whose last entries lie far back in the journal reads the journal about once, not once per instance; each release keeps the instance's last sequence")
    func releasesReadTheJournalOnce() throws {
        let dir = TemporaryDirectory("journal-releases")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(200, in: storage)
        try commit(keys, 2, 2, in: storage)
        // A few busy instances push the others' last entries back: 2,200 entries in the journal.
        let busy = Array(keys.prefix(LMDBStorage.journalFanIn))
        for sequence in UInt64(3)...502 { try commit(busy, sequence, sequence, in: storage) }
        #expect(try counts(storage).journal == keys.count + 500 * busy.count)
        let before = storage.journalEntriesRead.load(ordering: .relaxed)
        for index in busy.count..<keys.count { try storage.release(id: "i\(index)", claim: Records.hostA) }
        let read = storage.journalEntriesRead.load(ordering: .relaxed) - before
        #expect(read <= 2 * (keys.count + 500 * busy.count), "releases read \(read) journal entries")
        let released = try #require(try storage.instance(id: "i10"))
        #expect(released.lastSequence == 2)
        #expect(released.claim == .none)
        // The busy ones commit on, their last sequences as the journal says.
        try commit(busy, 503, 503, in: storage)
        #expect(try storage.instance(id: "i0")?.lastSequence == 503)
    }

    @Test("reading instances whose last entries lie far back in the journal reads the journal about once, not once per read, while commits go on; each read has the instance's last sequence")
    func readsReadTheJournalOnce() throws {
        let dir = TemporaryDirectory("journal-reads")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(200, in: storage)
        try commit(keys, 2, 2, in: storage)
        let busy = Array(keys.prefix(LMDBStorage.journalFanIn))
        for sequence in UInt64(3)...502 { try commit(busy, sequence, sequence, in: storage) }
        let journal = keys.count + 500 * busy.count
        #expect(try counts(storage).journal == journal)
        var before = storage.journalEntriesRead.load(ordering: .relaxed)
        for index in busy.count..<keys.count { #expect(try storage.instance(id: "i\(index)")?.lastSequence == 2) }
        var read = storage.journalEntriesRead.load(ordering: .relaxed) - before
        #expect(read <= 2 * journal, "reads of a quiet store read \(read) journal entries")
        // The busy ones commit on between reads: each read finds their last entry, and the quiet
        // ones' far back, reading about what was appended since.
        before = storage.journalEntriesRead.load(ordering: .relaxed)
        for sequence in UInt64(503)...602 {
            try commit(busy, sequence, sequence, in: storage)
            #expect(try storage.instance(id: "i0")?.lastSequence == sequence)
            #expect(try storage.instance(id: "i\(100 + Int(sequence) % 90)")?.lastSequence == 2)
        }
        read = storage.journalEntriesRead.load(ordering: .relaxed) - before
        #expect(read <= 2 * journal, "reads between commits read \(read) journal entries")
    }

    @Test("reads through a storage whose last view of the journal another storage's commits outdated (appends, then a checkpoint and a refilled journal) have each instance's last sequence as the store holds it")
    func readsAfterAnotherStoragesCommits() throws {
        let dir = TemporaryDirectory("journal-reads-other")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let keys = try instances(LMDBStorage.journalFanIn + 1, in: storage)
        try commit(keys, 2, 3, in: storage)
        #expect(try storage.instance(id: "i0")?.lastSequence == 3)
        try commit(keys, 4, 5, in: other)
        #expect(try storage.instance(id: "i0")?.lastSequence == 5)
        #expect(try storage.instance(id: "i4")?.lastSequence == 5)
        // A checkpoint moves the journal, and commits refill the positions this storage read.
        var last: UInt64 = 5
        while try counts(other).journal > 0 {
            try commit(Array(keys.dropFirst()), last + 1, last + 2, in: other, from: 1)
            last += 2
        }
        for _ in 0..<3 {
            try commit(Array(keys.dropFirst()), last + 1, last + 1, in: other, from: 1)
            last += 1
        }
        #expect(try storage.instance(id: "i0")?.lastSequence == 5)
        #expect(try storage.instance(id: "i1")?.lastSequence == last)
        #expect(try storage.instance(id: "i4")?.updated == Int64(last))
        // Its own commit, then the other's again.
        try commit(Array(keys.dropFirst()), last + 1, last + 1, in: storage, from: 1)
        #expect(try storage.instance(id: "i2")?.lastSequence == last + 1)
        try commit(Array(keys.dropFirst()), last + 2, last + 2, in: other, from: 1)
        #expect(try storage.instance(id: "i3")?.lastSequence == last + 2)
        #expect(try storage.instance(id: "i0")?.lastSequence == 5)
        #expect(try storage.texts(keys[3]).count == Int(last + 2))
    }

    @Test("a release or status change through a storage whose journal tails another storage's commits outdated (appends, then a checkpoint and a refilled journal) keeps each instance's last sequence as the store holds it")
    func releasesAfterAnotherStoragesCommits() throws {
        let dir = TemporaryDirectory("journal-release-other")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let keys = try instances(LMDBStorage.journalFanIn + 1, in: storage)
        try commit(keys, 2, 3, in: storage)
        // Another storage appends after what this one knows.
        try commit(keys, 4, 5, in: other)
        try storage.release(id: "i0", claim: Records.hostA)
        #expect(try storage.instance(id: "i0")?.lastSequence == 5)
        #expect(try storage.instance(id: "i0")?.claim == InstanceClaim.none)
        // Its checkpoint moves the journal, and its commits refill the positions this one knew.
        var last: UInt64 = 5
        while try counts(other).journal > 0 {
            try commit(Array(keys.dropFirst()), last + 1, last + 2, in: other, from: 1)
            last += 2
        }
        for _ in 0..<3 {
            try commit(Array(keys.dropFirst()), last + 1, last + 1, in: other, from: 1)
            last += 1
        }
        _ = try storage.setStatus(id: "i1", to: .completed, at: 1)
        try storage.release(id: "i2", claim: Records.hostA)
        #expect(try storage.instance(id: "i1")?.lastSequence == last)
        #expect(try storage.instance(id: "i1")?.status == .completed)
        #expect(try storage.instance(id: "i2")?.lastSequence == last)
        #expect(try other.texts(keys[4]).count == Int(last))
        #expect(try counts(other).journal == 3 * (keys.count - 1))
        #expect(try storage.instance(id: "i0")?.lastSequence == 5)
    }

    @Test("deleting an instance without journal entries leaves the journal unread; deleting one with some leaves them to the next checkpoint, counted as left behind")
    func deletesReadTheJournalOnlyForTheirOwn() throws {
        let dir = TemporaryDirectory("journal-deletes")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        for sequence in UInt64(2)...101 { try commit(keys, sequence, sequence, in: storage) }
        let quiet = try (0..<10).map { try #require(try storage.create(Records.new("q\($0)", claim: .none))).key }
        #expect(quiet.count == 10)
        let before = storage.journalEntriesRead.load(ordering: .relaxed)
        for index in 0..<10 { #expect(try storage.delete(id: "q\(index)")) }
        #expect(storage.journalEntriesRead.load(ordering: .relaxed) == before, "deletes of instances with no journal entries read the journal")
        #expect(try storage.instance(id: "q3") == nil)
        #expect(try counts(storage).journal == 100 * keys.count)
        // An instance with entries there: they stay until the next checkpoint, left out of the store's count.
        try storage.release(id: "i1", claim: Records.hostA)
        #expect(try storage.delete(id: "i1"))
        #expect(try counts(storage).journal == 100 * keys.count)
        #expect(try storage.environment.read { txn in try storage.leftBehindCount(txn) } == 100)
        #expect(try storage.statistics().logEntries == 101 * (keys.count - 1))
        #expect(try storage.texts(keys[2]).count == 101)
    }

    /// The bytes of the instance's state record, as stored.
    func stateRecord(_ key: UInt64, in storage: LMDBStorage) throws -> [UInt8]? {
        try storage.environment.read { txn in try txn.get(key, in: storage.layout.state) }
    }

    /// Whether every outcome is a commit.
    func allCommitted(_ outcomes: [CommitOutcome]) -> Bool {
        outcomes.allSatisfy { if case .committed = $0 { true } else { false } }
    }

    @Test("a commit that only adds entries to instances already in the journal leaves their state records as they were; their last sequence and update time read back from their last journal entries, in reads, lists and the next commits, and a checkpoint writes them into the records")
    func stateRecordsKeptWhileJournaled() throws {
        let dir = TemporaryDirectory("journal-state-kept")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 3, in: storage)
        let entered = try #require(try stateRecord(keys[0], in: storage))
        try commit(keys, 4, 5, in: storage)
        #expect(try stateRecord(keys[0], in: storage) == entered, "the record was not rewritten")
        let read = try #require(try storage.instance(id: "i0"))
        #expect((read.lastSequence, read.updated) == (5, 5))
        #expect(try storage.instances().map(\.lastSequence) == [5, 5, 5, 5])
        // A commit that finishes an instance rewrites its record, with everything up to date.
        var finishing = InstanceChanges(id: "i1", key: keys[1], claim: Records.hostA, entries: Records.range(6, 6), updated: 6)
        finishing.status = .completed
        #expect(allCommitted(try storage.commit(CommitRequest(durability: .synced, changes: [finishing]))))
        #expect(try stateRecord(keys[1], in: storage) != entered)
        #expect(try storage.instance(id: "i1").map { ($0.lastSequence, $0.status) } ?? (0, .running) == (6, .completed))
        // Another storage of the store (another process alike) commits in between: each finds
        // the instance's last sequence where the other left it.
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        #expect(try other.instance(id: "i0")?.lastSequence == 5)
        #expect(allCommitted(try other.commit(CommitRequest(durability: .synced, changes: [0, 2, 3].map { index in
            InstanceChanges(id: "i\(index)", key: keys[index], claim: Records.hostA, entries: Records.range(6, 6), updated: 6)
        }))))
        let outcomes = try storage.commit(CommitRequest(durability: .synced, changes: [0, 2, 3].map { index in
            InstanceChanges(id: "i\(index)", key: keys[index], claim: Records.hostA, entries: Records.range(7, 8), updated: 8)
        }))
        #expect(allCommitted(outcomes))
        let record = try #require(try storage.instance(id: "i0"))
        #expect((record.lastSequence, record.updated) == (8, 8))
        // One that repeats a sequence the other storage wrote is refused as a gap.
        #expect(throws: StorageFailure.self) {
            try other.commit(CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "i0", key: keys[0], claim: Records.hostA, entries: Records.range(8, 8), updated: 9)
            ]))
        }
        // Checkpoints (64 entries) write each instance's last sequence and time into its record.
        var last: UInt64 = 8
        while try counts(storage).journal > 0 {
            #expect(allCommitted(try storage.commit(CommitRequest(durability: .synced, changes: [0, 2, 3].map { index in
                InstanceChanges(id: "i\(index)", key: keys[index], claim: Records.hostA, entries: Records.range(last + 1, last + 4),
                                updated: Int64(last + 4))
            }))))
            last += 4
        }
        let stored = try #require(try storage.instance(id: "i0"))
        #expect(try stateRecord(keys[0], in: storage) != entered)
        #expect((stored.lastSequence, stored.updated) == (last, Int64(last)))
        #expect(try storage.texts(keys[3]) == (1...last).map { "\($0):entry \($0)" })
        #expect(try other.texts(keys[0]).count == Int(last))
    }

    @Test("a storage whose last known journal entry another storage's checkpoint moved, and whose position the journal has refilled since, reads the journal afresh before its next commit")
    func anotherCheckpointRefilled() throws {
        let dir = TemporaryDirectory("journal-other-checkpoint")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 32)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        // Journal positions 1 to 8, the last one instance i3's sequence 3.
        try commit(keys, 2, 3, in: storage)
        var last: UInt64 = 3
        while try counts(other).journal > 0 {
            try commit(keys, last + 1, last + 2, in: other)
            last += 2
        }
        // Positions 1 to 8 again: the second commit leaves the state records as the first wrote them.
        for _ in 0..<2 {
            try commit(keys, last + 1, last + 1, in: other)
            last += 1
        }
        try commit(keys, last + 1, last + 1, in: storage)
        for (index, key) in keys.enumerated() {
            #expect(try storage.instance(id: "i\(index)")?.lastSequence == last + 1)
            #expect(try other.texts(key).count == Int(last + 1))
        }
    }

    @Test("a commit that fails after some of its instances went to the journal leaves nothing of them behind: the next commits continue from what the store holds")
    func failedCommitAfterJournaling() throws {
        let dir = TemporaryDirectory("journal-failed")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 3, in: storage)
        try commit(keys, 4, 4, in: storage)
        #expect(throws: StorageFailure.self) {
            try storage.commit(CommitRequest(durability: .synced, changes: keys.enumerated().map { index, key in
                // The last instance's entries leave a gap: the whole commit fails.
                let first: UInt64 = index == keys.count - 1 ? 7 : 5
                return InstanceChanges(id: "i\(index)", key: key, claim: Records.hostA, entries: Records.range(first, first), updated: 5)
            }))
        }
        try commit(keys, 5, 6, in: storage)
        for (index, key) in keys.enumerated() {
            #expect(try storage.instance(id: "i\(index)")?.lastSequence == 6)
            #expect(try storage.texts(key) == (1...6).map { "\($0):entry \($0)" })
        }
    }

    @Test("a pulled part that marks a delivery before the signal tables are open: the transaction runs again with them open, writing every part once, without asking for the parts already pulled")
    func pulledPartOpensSignalTables() throws {
        let dir = TemporaryDirectory("journal-pulled-signals")
        // A consumer with a version waiting, registered through another storage object: this
        // one has not opened the signal tables when the commit starts.
        let signal = UUID(), consumer = UUID()
        let keys: [UInt64]
        do {
            let earlier = try LMDBStorage.open(path: dir.path), signals = try earlier.signalStorage()
            #expect(try signals.register(SignalContractTests.consumer(signal, id: consumer), at: 1))
            _ = try signals.post([SignalContractTests.post(signal, "v1")], keepLatest: 1, at: 2, durability: nil)
            keys = try instances(2, in: earlier)
        }
        let storage = try LMDBStorage.open(path: dir.path)
        var marked = InstanceChanges(id: "i1", key: keys[1], claim: Records.hostA, entries: Records.range(2, 3), updated: 3)
        marked.deliveryMarks = [SignalContractTests.mark(consumer, 1)]
        var parts = [CommitRequest(durability: .synced, changes: [marked])]
        var asked = 0
        let outcomes = try storage.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "i0", key: keys[0], claim: Records.hostA, entries: Records.range(2, 2), updated: 2)
        ])) {
            asked += 1
            return parts.isEmpty ? nil : parts.removeFirst()
        }
        #expect(asked == 2)
        #expect(outcomes.count == 2 && outcomes.allSatisfy { if case .committed = $0 { true } else { false } })
        #expect(try storage.texts(keys[0]) == ["1:entry 1", "2:entry 2"])
        #expect(try storage.texts(keys[1]) == ["1:entry 1", "2:entry 2", "3:entry 3"])
        #expect(try storage.signalStorage().consumer(consumer)?.lastDelivered == 1, "the mark was written with the entries")
    }

    @Test("a pulled commit that fills the map: the map grows and the transaction runs again, writing every part once, without asking for the parts already pulled")
    func pulledCommitGrowsTheMap() throws {
        let dir = TemporaryDirectory("journal-pulled-growth")
        let storage = try LMDBStorage.open(
            path: dir.path, configuration: EnvironmentConfiguration(initialMapSize: 256 << 10, maximumMapSize: 64 << 20),
            checkpoints: .standard)
        let keys = try instances(40, in: storage)
        let before = try storage.environment.info().mapSize
        // 40 parts of one instance each, 40 entries of 4 KiB per instance: several times the map.
        func part(_ index: Int) -> CommitRequest {
            var records = LogRecords(firstSequence: 2)
            for _ in 0..<40 { records.append([UInt8](repeating: UInt8(index), count: 4 << 10)) }
            return CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "i\(index)", key: keys[index], claim: Records.hostA, entries: records, updated: 2)
            ])
        }
        var next = 1, asked = 0
        let outcomes = try storage.commit(part(0)) {
            asked += 1
            defer { next += 1 }
            return next < keys.count ? part(next) : nil
        }
        #expect(try storage.environment.info().mapSize > before, "the map grew")
        #expect(asked == keys.count)
        #expect(outcomes.count == keys.count && outcomes.allSatisfy { if case .committed = $0 { true } else { false } })
        for (index, key) in keys.enumerated() {
            var count = 0
            try storage.readEntries(of: key, from: 2, through: .max) { _, bytes in
                count += 1
                #expect(bytes.count == 4 << 10 && bytes.allSatisfy { $0 == UInt8(index) })
                return true
            }
            #expect(count == 40)
        }
    }

    @Test("a checkpoint moves the whole journal into the archive; every instance reads back whole and keeps committing")
    func checkpoint() throws {
        let dir = TemporaryDirectory("journal-checkpoint")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 1_000)
        let keys = try instances(8, in: storage)
        var last: UInt64 = 1
        let perRound = UInt64(LMDBStorage.journalEntriesPerInstance)
        while last < UInt64(storage.checkpoints.entries / keys.count) * 3 + 5 {
            try commit(keys, last + 1, last + perRound, in: storage)
            last += perRound
        }
        let (journal, log) = try counts(storage)
        #expect(journal < storage.checkpoints.entries, "the journal was checkpointed (\(journal) entries left)")
        #expect(journal + log == keys.count * Int(last))
        for key in keys {
            #expect(try storage.texts(key) == (1...last).map { "\($0):entry \($0)" })
        }
        try commit(keys, last + 1, last + 1, in: storage)
        #expect(try storage.texts(keys[7], from: last, through: last + 1) == ["\(last):entry \(last)", "\(last + 1):entry \(last + 1)"])
        #expect(storage.checkStructure(progress: { _ in }).isEmpty)
        #expect(try storage.statistics().logEntries == keys.count * Int(last + 1))
    }

    @Test("the journal is checkpointed at its floor of entries or, with entries of many instances, at its entries per instance, up to its ceiling whatever the instances")
    func checkpointThresholds() throws {
        let checkpoints = JournalCheckpoints(entries: 64, entriesPerInstance: 32, most: 200)
        #expect((checkpoints.threshold(instances: 1), checkpoints.threshold(instances: 4), checkpoints.threshold(instances: 8)) == (64, 128, 200))
        for (count, due) in [(4, 128), (8, 200)] {
            let dir = TemporaryDirectory("journal-thresholds-\(count)")
            let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpoints: checkpoints)
            let keys = try instances(count, in: storage)
            var last: UInt64 = 1, held: [Int] = []
            repeat {
                try commit(keys, last + 1, last + 4, in: storage)
                last += 4
                held.append(try counts(storage).journal)
            } while held.last! > 0 && held.count < 20
            let perCommit = 4 * count
            // Every commit appends; the first that brings the journal to `due` entries empties it.
            let filling = Array(stride(from: perCommit, to: due, by: perCommit))
            #expect(held == filling + [0], "\(count) instances")
            #expect(try counts(storage).log == count * Int(last))
        }
    }

    @Test("a claim of an instance with entries in the journal moves the whole journal out first, so that its resume reads the instance's range of the log instead of searching the journal; a claim of one without leaves the journal as it is")
    func claimCheckpoints() throws {
        let dir = TemporaryDirectory("journal-claim")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 3, in: storage)
        let lone = try #require(try storage.create(Records.new("lone", claim: .none)))
        #expect(try counts(storage).journal == 2 * keys.count)
        guard case .claimed(let alone) = try storage.claim(id: "lone", as: Records.hostA, takingOverIf: { _ in false }) else {
            Issue.record("the lone instance was not claimed")
            return
        }
        #expect(alone.key == lone.key)
        #expect(try counts(storage).journal == 2 * keys.count, "no entry of the lone instance is in the journal")
        try storage.release(id: "i2", claim: Records.hostA)
        guard case .claimed(let claimed) = try storage.claim(id: "i2", as: Records.hostB, takingOverIf: { _ in false }) else {
            Issue.record("i2 was not claimed")
            return
        }
        #expect((claimed.lastSequence, claimed.claim) == (3, Records.hostB))
        #expect(try counts(storage) == (journal: 0, log: 3 * keys.count + 1))
        for (index, key) in keys.enumerated() {
            #expect(try storage.texts(key) == ["1:entry 1", "2:entry 2", "3:entry 3"])
            #expect(try storage.instance(id: "i\(index)")?.lastSequence == 3)
        }
        // The others commit on from where the checkpoint left them; the claimed one under its new claim.
        #expect(allCommitted(try storage.commit(CommitRequest(durability: .synced, changes: keys.enumerated().map { index, key in
            InstanceChanges(id: "i\(index)", key: key, claim: index == 2 ? Records.hostB : Records.hostA, entries: Records.range(4, 4), updated: 4)
        }))))
        #expect(try storage.texts(keys[2]).count == 4)
    }

    @Test("a commit takes an instance's record from the commit just before it only when no other write came between: after another host's claim, through this storage or another, the first host is refused; the new owner, and every other instance, go on from the stored sequence")
    func recordsCachedBetweenCommits() throws {
        let dir = TemporaryDirectory("journal-state-cache")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        func commit(_ first: UInt64, claims: [InstanceClaim]) throws -> [CommitOutcome] {
            try storage.commit(CommitRequest(durability: .synced, changes: keys.indices.map { index in
                InstanceChanges(id: "i\(index)", key: keys[index], claim: claims[index], entries: Records.range(first, first), updated: Int64(first))
            }))
        }
        let hostA = [InstanceClaim](repeating: Records.hostA, count: keys.count)
        #expect(allCommitted(try commit(2, claims: hostA)))
        #expect(allCommitted(try commit(3, claims: hostA)), "the records taken from the commit before")
        try storage.release(id: "i1", claim: Records.hostA)
        guard case .claimed = try storage.claim(id: "i1", as: Records.hostB, takingOverIf: { _ in false }) else {
            Issue.record("i1 was not claimed")
            return
        }
        let outcomes = try commit(4, claims: hostA)
        guard case .refused(let current) = outcomes[1] else {
            Issue.record("host A's commit to i1 after host B claimed it was not refused: \(outcomes[1])")
            return
        }
        #expect(current == Records.hostB)
        #expect(outcomes.enumerated().allSatisfy { index, outcome in
            if index == 1 { return true }
            if case .committed = outcome { return true }
            return false
        })
        var claims = hostA
        claims[1] = Records.hostB
        var next = try storage.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "i1", key: keys[1], claim: Records.hostB, entries: Records.range(4, 4), updated: 4),
        ]))
        #expect(allCommitted(next))
        // Writes of another storage of the store (as of another process): the next commit reads
        // the record again.
        let other = try LMDBStorage.open(path: dir.path)
        try other.release(id: "i2", claim: Records.hostA)
        guard case .claimed = try other.claim(id: "i2", as: Records.hostB, takingOverIf: { _ in false }) else {
            Issue.record("i2 was not claimed")
            return
        }
        next = try commit(5, claims: claims)
        guard case .refused(let taken) = next[2] else {
            Issue.record("host A's commit to i2 after its record changed underneath was not refused: \(next[2])")
            return
        }
        #expect(taken == Records.hostB)
        for (index, key) in keys.enumerated() {
            #expect(try storage.texts(key) == (1...(index == 2 ? 4 : 5)).map { "\($0):entry \($0)" })
        }
    }

    @Test("deleting instances whose entries lie in the journal reads none of it: their entries are gone from reads and counts at once, the next checkpoint archives only the others', and an id deleted and created again starts a log of its own")
    func deletesLeaveTheJournalUnread() throws {
        let dir = TemporaryDirectory("journal-deletes-unread")
        let storage = try LMDBStorage.open(
            path: dir.path, configuration: EnvironmentConfiguration(), checkpoints: JournalCheckpoints(entries: 3_000, entriesPerInstance: 1, most: 3_000))
        let keys = try instances(200, in: storage)
        try commit(keys, 2, 2, in: storage)
        // A few busy instances push the others' entries back: 2,200 entries in the journal.
        let busy = Array(keys.prefix(LMDBStorage.journalFanIn))
        for sequence in UInt64(3)...502 { try commit(busy, sequence, sequence, in: storage) }
        #expect(try counts(storage).journal == keys.count + 500 * busy.count)
        let deleted = Array(keys[100...])
        let before = storage.journalEntriesRead.load(ordering: .relaxed)
        for index in 100..<200 { #expect(try storage.delete(id: "i\(index)")) }
        let read = storage.journalEntriesRead.load(ordering: .relaxed) - before
        #expect(read == 0, "100 deletes read \(read) journal entries")
        let remaining = 96 * 2 + busy.count * 502
        #expect(try storage.statistics().logEntries == remaining)
        #expect(try storage.instance(id: "i150") == nil)
        #expect(try storage.texts(deleted[50]) == [])
        // The same id again: a new key, and only its own entries.
        let again = try #require(try storage.create(Records.new("i150", claim: Records.hostA)))
        #expect(!deleted.contains(again.key))
        #expect(try storage.texts(again.key) == ["1:entry 1"])
        // Commits until a checkpoint empties the journal: it archives the living instances' entries only.
        var last: UInt64 = 502
        while try counts(storage).journal > 0 {
            last += 1
            try commit(busy, last, last, in: storage)
        }
        let archivedKeys = try storage.environment.read { txn in
            var found = Set<UInt64>()
            try txn.forEach(in: storage.layout.archive) { key, _ in
                found.insert(try ArchiveKey(lmdbBytes: key).instance)
                return true
            }
            return found
        }
        #expect(archivedKeys.isDisjoint(with: deleted))
        #expect(archivedKeys.isSuperset(of: keys.prefix(100)))
        let archived = try storage.environment.read { txn in try storage.archivedEntryCount(txn) }
        // Each instance's first entry is in `log` (created there), the later ones were journaled.
        #expect(archived == 96 + busy.count * Int(last - 1))
        #expect(try storage.statistics().logEntries == archived + 101)
        #expect(try storage.texts(keys[0]).count == Int(last))
        #expect(try storage.texts(keys[99]) == ["1:entry 1", "2:entry 2"])
        #expect(try storage.texts(again.key) == ["1:entry 1"])
        #expect(storage.checkStructure(progress: { _ in }).isEmpty)
    }

    @Test("deleting an instance whose state record is damaged (so that its journal entries are not known) removes its journal entries and no other's")
    func deleteJournaled() throws {
        let dir = TemporaryDirectory("journal-delete")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 5, in: storage)
        try storage.environment.write { txn in try txn.put([0xFF, 0x00], forKey: keys[1], in: storage.layout.state) }
        #expect(try storage.delete(id: "i1"))
        #expect(try counts(storage).journal == 4 * (keys.count - 1))
        #expect(try storage.texts(keys[1]) == [])
        #expect(try storage.texts(keys[2]).count == 5)
    }

    @Test("checkpoints append the journal's entries to the archive, a generation each, and leave one segment record per instance in its range of the log: reads that start or end inside a segment, or span segments, the log's own entries and the journal, return each entry once and in order; deleting an instance removes its archived entries and no other's")
    func archiveSegments() throws {
        let dir = TemporaryDirectory("journal-archive")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let keys = try instances(8, in: storage)
        func commit(_ indices: Range<Int>, _ first: UInt64, _ last: UInt64) throws {
            #expect(allCommitted(try storage.commit(CommitRequest(durability: .synced, changes: indices.map { index in
                InstanceChanges(id: "i\(index)", key: keys[index], claim: Records.hostA, entries: Records.range(first, last), updated: Int64(last))
            }))))
        }
        func archived() throws -> (entries: Int, segments: Int) {
            try storage.environment.read { txn in (try storage.archivedEntryCount(txn), try storage.segmentCount(txn)) }
        }
        try commit(0..<8, 2, 5)
        try commit(0..<8, 6, 9)
        #expect(try counts(storage).journal == 0)
        #expect(try archived() == (64, 8), "the first checkpoint: generation 1")
        #expect(try archiveValues(storage) == 8, "each instance's 8 entries in one chunk")
        // One instance alone writes its range of the log, after its segment; the others the journal.
        try commit(0..<1, 10, 12)
        try commit(1..<8, 10, 12)
        try commit(0..<8, 13, 16)
        try commit(0..<8, 17, 20)
        #expect(try counts(storage).journal == 0)
        let afterSecond = 64 + 8 * 8 + 7 * 3
        #expect(try archived() == (afterSecond, 16), "the second checkpoint: generation 2")
        try commit(0..<8, 21, 22)
        #expect(try counts(storage) == (journal: 16, log: 8 * 20))
        let texts = { (from: UInt64, through: UInt64) in (from...through).map { "\($0):entry \($0)" } }
        for key in keys { #expect(try storage.texts(key) == texts(1, 22)) }
        let first = keys[0]
        for (from, through) in [(4, 7), (9, 9), (7, 14), (11, 21), (20, 20), (12, 13), (1, 2), (21, 40)] as [(UInt64, UInt64)] {
            #expect(try storage.texts(first, from: from, through: through) == texts(from, min(through, 22)), "\(from) through \(through)")
        }
        // A read that stops early stops inside a segment too.
        var visited: [UInt64] = []
        try storage.readEntries(of: first, from: 3, through: .max) { sequence, _ in
            visited.append(sequence)
            return sequence < 5
        }
        #expect(visited == [3, 4, 5])
        #expect(try storage.statistics().logEntries == 8 * 22)
        #expect(storage.checkStructure(progress: { _ in }).isEmpty)
        #expect(try storage.delete(id: "i0"))
        #expect(try storage.texts(first) == [])
        #expect(try archived() == (afterSecond - 16, 14))
        #expect(try storage.statistics().logEntries == 7 * 22)
        for key in keys.dropFirst() { #expect(try storage.texts(key) == texts(1, 22)) }
        // The next checkpoint follows the last generation.
        try commit(1..<8, 23, 27)
        try commit(1..<8, 28, 31)
        #expect(try archived().segments == 21)
        for key in keys.dropFirst() { #expect(try storage.texts(key) == texts(1, 31)) }
        #expect(try storage.environment.read { txn in
            try txn.withCursor(on: storage.layout.archive) { try $0.last().map { try ArchiveKey(lmdbBytes: $0.key).generation } }
        } == 3)
    }

    @Test("a checkpoint archives each instance's entries in chunks of consecutive entries, each after the first as its difference from the one before (as many as fit in 2,000 bytes; a larger entry alone): reads that start, end or stop anywhere inside a chunk return each entry once and in order, deleting an instance removes its chunks, and a chunk whose counts run past its end, or a segment that ends before it starts, is reported as a corrupted store (the instance can still be deleted)")
    func archiveChunks() throws {
        let dir = TemporaryDirectory("journal-chunks")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 40)
        let keys = try instances(4, in: storage)
        // 307 or 308 bytes each, but entry 9 2,507; each differs from the one before in a few
        // bytes, entry 9 in its 2,200 last: chunks 2...8, 9, 10...11.
        func text(_ sequence: UInt64) -> String {
            sequence == 1 ? "entry 1" : "entry \(sequence)" + String(repeating: "x", count: sequence == 9 ? 2_500 : 300)
        }
        func commit(_ first: UInt64, _ last: UInt64) throws {
            #expect(allCommitted(try storage.commit(CommitRequest(durability: .synced, changes: keys.enumerated().map { index, key in
                var records = LogRecords(firstSequence: first)
                for sequence in first...last { records.append(Array(text(sequence).utf8)) }
                return InstanceChanges(id: "i\(index)", key: key, claim: Records.hostA, entries: records, updated: Int64(last))
            }))))
        }
        try commit(2, 6)
        try commit(7, 11)
        #expect(try counts(storage) == (journal: 0, log: 4 * 11))
        #expect(try archiveValues(storage) == 4 * 3)
        let expected = { (from: UInt64, through: UInt64) in (from...through).map { "\($0):" + text($0) } }
        for key in keys {
            for from in UInt64(1)...12 {
                for through in from...12 {
                    #expect(try storage.texts(key, from: from, through: through) == (from <= 11 ? expected(from, min(through, 11)) : []),
                            "\(from) through \(through)")
                }
                for stop in from..<12 {
                    var visited: [UInt64] = []
                    try storage.readEntries(of: key, from: from, through: .max) { sequence, _ in
                        visited.append(sequence)
                        return sequence < stop
                    }
                    #expect(visited == Array(from...min(stop, 11)), "from \(from), stopping at \(stop)")
                }
            }
        }
        #expect(try storage.delete(id: "i0"))
        #expect(try storage.texts(keys[0]) == [])
        #expect(try archiveValues(storage) == 3 * 3)
        #expect(try storage.statistics().logEntries == 3 * 11)
        #expect(try storage.texts(keys[1]) == expected(1, 11))
        // A chunk whose first entry's bytes run past its end.
        try storage.environment.write { txn in
            try txn.put([0x10, 0, 0x10, 0, 1, 2, 3], forKey: ArchiveKey(generation: 1, instance: keys[1], sequence: 2), in: storage.layout.archive)
        }
        let failure = #expect(throws: StorageFailure.self) { _ = try storage.texts(keys[1]) }
        #expect(failure?.kind == .corrupted, "\(String(describing: failure))")
        #expect(try storage.texts(keys[2]) == expected(1, 11))
        // A segment record whose last sequence comes before its first.
        try storage.environment.write { txn in
            // Generation 1, last sequence 1.
            let record: [UInt8] = [0xA7] + Array(repeating: 0, count: 7) + [1] + Array(repeating: 0, count: 7) + [1]
            try txn.put(record, forKey: LogKey(instance: keys[2], sequence: 2), in: storage.layout.log)
        }
        let backwards = #expect(throws: StorageFailure.self) { _ = try storage.texts(keys[2]) }
        #expect(backwards?.kind == .corrupted, "\(String(describing: backwards))")
        #expect(try storage.texts(keys[3]) == expected(1, 11))
        // Deleting the damaged instance removes it all the same, its chunks too.
        #expect(try storage.delete(id: "i2"))
        #expect(try storage.texts(keys[2]) == [])
        #expect(try archiveValues(storage) == 2 * 3)
        #expect(try storage.texts(keys[3]) == expected(1, 11))
    }

    /// Rewrites the archive as checkpoints of an older format wrote it: format 5, a value per
    /// entry (segment records marked 0xA5, no count of archived entries in `meta`); format 6, a
    /// chunk of whole records, each after its length, per segment (marked 0xA6). The store is
    /// then marked as of that format.
    func rewriteArchive(_ storage: LMDBStorage, keys: [UInt64], asFormat format: UInt32) throws {
        var records: [UInt64: [UInt64: [UInt8]]] = [:]
        for key in keys {
            try storage.readEntries(of: key, from: 1, through: .max) { sequence, bytes in
                records[key, default: [:]][sequence] = Array(bytes)
                return true
            }
        }
        let layout = storage.layout
        try storage.environment.write { txn in
            var segments: [(LogKey, [UInt8])] = []
            try txn.forEach(in: layout.log) { key, value in
                if value.count == 17, value[0] == 0xA7 { segments.append((try LogKey(lmdbBytes: key), Array(value))) }
                return true
            }
            #expect(!segments.isEmpty)
            try txn.removeAll(in: layout.archive)
            for (key, value) in segments {
                let generation = value[1..<9].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let last = value[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let entries = try (key.sequence...last).map { try #require(records[key.instance]?[$0]) }
                if format == 5 {
                    for (offset, entry) in entries.enumerated() {
                        try txn.put(entry, forKey: ArchiveKey(generation: generation, instance: key.instance, sequence: key.sequence + UInt64(offset)),
                                    in: layout.archive)
                    }
                } else {
                    let chunk = entries.flatMap { entry in withUnsafeBytes(of: UInt32(entry.count).bigEndian, Array.init) + entry }
                    try txn.put(chunk, forKey: ArchiveKey(generation: generation, instance: key.instance, sequence: key.sequence), in: layout.archive)
                }
                try txn.put([format == 5 ? 0xA5 : 0xA6] + value.dropFirst(), forKey: key, in: layout.log)
            }
            if format == 5 { _ = try txn.delete("archived", in: layout.meta) }
            try markFormat(format, txn, in: layout)
        }
    }

    @Test("a format 5 store (one archived entry per value) or 6 (chunks of whole records) is migrated at open: its archived entries read back whole and are counted, and its next checkpoint archives chunks of differences after them", arguments: [UInt32(5), 6])
    func migratesOlderArchives(format: UInt32) throws {
        let dir = TemporaryDirectory("journal-migrate-\(format)")
        var keys: [UInt64] = []
        do {
            let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
            keys = try instances(4, in: storage)
            try commit(keys, 2, 9, in: storage)
            try commit(keys, 10, 17, in: storage)
            #expect(try counts(storage).journal == 0, "checkpointed")
            try rewriteArchive(storage, keys: keys, asFormat: format)
        }
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        #expect(try storage.statistics().formatVersion == LMDBStorage.formatVersion)
        #expect(try counts(storage) == (journal: 0, log: 17 * keys.count))
        // Format 5's values, one per entry; format 6's chunks, one per instance here.
        let older = format == 5 ? 16 : 1
        #expect(try archiveValues(storage) == older * keys.count)
        let texts = { (from: UInt64, through: UInt64) in (from...through).map { "\($0):entry \($0)" } }
        for key in keys {
            #expect(try storage.texts(key) == texts(1, 17))
            #expect(try storage.texts(key, from: 5, through: 12) == texts(5, 12))
        }
        try commit(keys, 18, 25, in: storage)
        try commit(keys, 26, 33, in: storage)
        #expect(try archiveValues(storage) == (older + 1) * keys.count, "then a chunk of differences per instance")
        for key in keys {
            #expect(try storage.texts(key) == texts(1, 33))
            #expect(try storage.texts(key, from: 10, through: 30) == texts(10, 30))
        }
        #expect(try storage.statistics().logEntries == 33 * keys.count)
        #expect(try storage.delete(id: "i0"))
        #expect(try counts(storage) == (journal: 0, log: 33 * 3))
        #expect(try archiveValues(storage) == (older + 1) * 3)
    }

    @Test("the commit that fills the journal to seven eighths of its checkpoint has it read ahead on another thread: the checkpoint then copies only the entries appended since, and every instance reads back whole")
    func journalReadAhead() throws {
        let dir = TemporaryDirectory("journal-ahead")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let keys = try instances(8, in: storage)
        try commit(keys, 2, 5, in: storage)
        try commit(keys, 6, 8, in: storage)
        #expect(try counts(storage).journal == 56)
        storage.awaitReadingAhead()
        try commit(keys, 9, 9, in: storage)
        #expect(try counts(storage) == (journal: 0, log: 8 * 9))
        #expect(storage.checkpointsReadAhead == 1)
        for key in keys { #expect(try storage.texts(key) == (1...9).map { "\($0):entry \($0)" }) }
        // And again, from the buffers the first one kept.
        try commit(keys, 10, 16, in: storage)
        storage.awaitReadingAhead()
        try commit(keys, 17, 17, in: storage)
        #expect(storage.checkpointsReadAhead == 2)
        for key in keys { #expect(try storage.texts(key) == (1...17).map { "\($0):entry \($0)" }) }
        #expect(try storage.statistics().logEntries == 8 * 17)
    }

    @Test("a commit of many entries that leaves the journal short of seven eighths of its checkpoint, but would take it past the checkpoint if the next were as large, has it read ahead too: the next commit's checkpoint copies only its own entries")
    func journalReadAheadOfLargeCommits() throws {
        let dir = TemporaryDirectory("journal-ahead-large")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let keys = try instances(8, in: storage)
        try commit(keys, 2, 5, in: storage)
        #expect(try counts(storage).journal == 32)
        storage.awaitReadingAhead()
        try commit(keys, 6, 9, in: storage)
        #expect(try counts(storage) == (journal: 0, log: 8 * 9))
        #expect(storage.checkpointsReadAhead == 1)
        for key in keys { #expect(try storage.texts(key) == (1...9).map { "\($0):entry \($0)" }) }
        // A small commit after a small one is not read ahead of.
        try commit(keys, 10, 10, in: storage)
        storage.awaitReadingAhead()
        try commit(keys, 11, 11, in: storage)
        #expect(try counts(storage).journal == 16)
        #expect(storage.checkpointsReadAhead == 1)
    }

    @Test("a journal read ahead is not taken by the checkpoint when another write came between (a delete through this storage or another, another storage's commit): the checkpoint reads the journal itself, and a deleted instance's entries stay deleted")
    func journalReadAheadOvertaken() throws {
        let dir = TemporaryDirectory("journal-ahead-overtaken")
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        let keys = try instances(9, in: storage)
        let texts = { (through: UInt64) in (1...through).map { "\($0):entry \($0)" } }
        // Deleted by another storage after the read.
        try commit(Array(keys.prefix(8)), 2, 8, in: storage)
        storage.awaitReadingAhead()
        #expect(try other.delete(id: "i0"))
        try commit(Array(keys[1..<8]), 9, 11, in: storage, from: 1)
        #expect(try counts(storage) == (journal: 0, log: 7 * 11 + 1))
        #expect(storage.checkpointsReadAhead == 0)
        #expect(try storage.texts(keys[0]) == [])
        for key in keys[1..<8] { #expect(try storage.texts(key) == texts(11)) }
        #expect(try archiveValues(storage) == 7)
        // Deleted by this storage after the read.
        try commit(Array(keys[1..<8]), 12, 19, in: storage, from: 1)
        storage.awaitReadingAhead()
        #expect(try storage.delete(id: "i1"))
        try commit(Array(keys[2..<8]), 20, 22, in: storage, from: 2)
        #expect(try counts(storage) == (journal: 0, log: 6 * 22 + 1))
        #expect(storage.checkpointsReadAhead == 0)
        #expect(try storage.texts(keys[1]) == [])
        for key in keys[2..<8] { #expect(try storage.texts(key) == texts(22)) }
        // Another storage's commit after the read.
        try commit(Array(keys[2..<8]), 23, 30, in: storage, from: 2)
        try commit(Array(keys[2..<8]), 31, 32, in: storage, from: 2)
        storage.awaitReadingAhead()
        #expect(allCommitted(try other.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "i8", key: keys[8], claim: Records.hostA, entries: Records.range(2, 2), updated: 2)
        ]))))
        try commit(Array(keys[2..<8]), 33, 33, in: storage, from: 2)
        #expect(try counts(storage) == (journal: 0, log: 6 * 33 + 2))
        #expect(storage.checkpointsReadAhead == 0)
        for key in keys[2..<8] { #expect(try storage.texts(key) == texts(33)) }
        #expect(try storage.texts(keys[8]) == texts(2))
    }

    @Test("a format 1 store (index state in the log) is migrated at open, and reads and commits as before")
    func migratesFormatOne() throws {
        let dir = TemporaryDirectory("journal-migrate")
        var key: UInt64 = 0
        do {
            let storage = try LMDBStorage.open(path: dir.path)
            key = try #require(try storage.create(Records.new("old", entries: 3, claim: .none))).key
            // Turn it into what format 1 wrote: the state record in `log` at (key, max), format 1.
            let layout = storage.layout
            try storage.environment.write { txn in
                let state = try #require(try txn.get(key, in: layout.state))
                try txn.put(state, forKey: LogKey(instance: key, sequence: .max), in: layout.log)
                _ = try txn.delete(key, in: layout.state)
                try markFormat(1, txn, in: layout)
            }
        }
        let storage = try LMDBStorage.open(path: dir.path)
        #expect(try storage.environment.read { txn in try txn.count(of: storage.layout.log) } == 3, "the state record left the log")
        #expect(try storage.statistics().formatVersion == LMDBStorage.formatVersion)
        #expect(try storage.instance(id: "old")?.lastSequence == 3)
        #expect(try storage.texts(key) == ["1:entry 1", "2:entry 2", "3:entry 3"])
        _ = try storage.claim(id: "old", as: Records.hostA, takingOverIf: { _ in false })
        _ = try storage.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "old", key: key, claim: Records.hostA, entries: Records.range(4, 4), updated: 4)
        ]))
        #expect(try storage.texts(key).count == 4)
    }

    @Test("a journal value cut short (bad input) is reported as a corrupted store by reads of its instance, by lists and by the next commit, and nothing is written")
    func journalValueCutShort() throws {
        let dir = TemporaryDirectory("journal-cut")
        let storage = try LMDBStorage.open(path: dir.path)
        let keys = try instances(LMDBStorage.journalFanIn, in: storage)
        try commit(keys, 2, 3, in: storage)
        try commit(keys, 4, 4, in: storage)
        let layout = storage.layout
        try storage.environment.write { txn in
            let last = try txn.withCursor(on: layout.journal) { cursor in try #require(try cursor.last()).key(as: UInt64.self) }
            try txn.put([1, 2, 3], forKey: last, in: layout.journal)
        }
        func expectCorrupted(_ body: () throws -> Void) {
            let failure = #expect(throws: StorageFailure.self) { try body() }
            #expect(failure?.kind == .corrupted, "\(String(describing: failure))")
        }
        expectCorrupted { _ = try storage.instance(id: "i3") }
        expectCorrupted { _ = try storage.instances() }
        expectCorrupted { _ = try storage.texts(keys[3]) }
        // A storage that has not read the journal yet must read it whole before it commits.
        let other = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpoints: .standard)
        let before = try counts(storage)
        expectCorrupted {
            _ = try other.commit(CommitRequest(durability: .synced, changes: keys.enumerated().map { index, key in
                InstanceChanges(id: "i\(index)", key: key, claim: Records.hostA, entries: Records.range(5, 5), updated: 5)
            }))
        }
        #expect(try counts(storage) == before)
    }

    @Test("a format 3 store (journal values without their commit's time) is migrated at open: its journaled entries read back whole, and its instances keep committing")
    func migratesFormatThree() throws {
        let dir = TemporaryDirectory("journal-migrate-3")
        var keys: [UInt64] = []
        do {
            let storage = try LMDBStorage.open(path: dir.path)
            keys = try instances(LMDBStorage.journalFanIn, in: storage)
            try commit(keys, 2, 3, in: storage)
            // Turn the journal into what format 3 wrote: instance and sequence, then the record.
            let layout = storage.layout
            try storage.environment.write { txn in
                var values: [(UInt64, [UInt8])] = []
                try txn.forEach(in: layout.journal) { key, value in
                    values.append((try UInt64(lmdbBytes: key), Array(value.prefix(16)) + Array(value.dropFirst(24))))
                    return true
                }
                for (position, value) in values { try txn.put(value, forKey: position, in: layout.journal) }
                try markFormat(3, txn, in: layout)
            }
        }
        let storage = try LMDBStorage.open(path: dir.path)
        #expect(try storage.statistics().formatVersion == LMDBStorage.formatVersion)
        #expect(try counts(storage).journal == 2 * keys.count, "the entries are still in the journal")
        for (index, key) in keys.enumerated() {
            #expect(try storage.texts(key) == ["1:entry 1", "2:entry 2", "3:entry 3"])
            #expect(try storage.instance(id: "i\(index)").map { ($0.lastSequence, $0.updated) } ?? (0, 0) == (3, 3))
        }
        try commit(keys, 4, 5, in: storage)
        #expect(try storage.instances().map(\.lastSequence) == [5, 5, 5, 5])
        #expect(try storage.texts(keys[2]).count == 5)
    }

    @Test("a format 4 store (checkpoints into the log) is migrated at open: its entries in the log and the journal read back whole, and its next checkpoint writes the archive's first generation")
    func migratesFormatFour() throws {
        let dir = TemporaryDirectory("journal-migrate-4")
        var keys: [UInt64] = []
        do {
            let storage = try LMDBStorage.open(path: dir.path)
            keys = try instances(LMDBStorage.journalFanIn, in: storage)
            try commit(keys, 2, 5, in: storage)
            try storage.environment.write { txn in
                try markFormat(4, txn, in: storage.layout)
            }
        }
        let storage = try LMDBStorage.open(path: dir.path, configuration: EnvironmentConfiguration(), checkpointEntries: 64)
        #expect(try storage.statistics().formatVersion == LMDBStorage.formatVersion)
        #expect(try counts(storage) == (journal: 4 * keys.count, log: keys.count))
        for key in keys { #expect(try storage.texts(key) == (1...5).map { "\($0):entry \($0)" }) }
        try commit(keys, 6, 17, in: storage)
        let archived = try storage.environment.read { txn in
            (try storage.archivedEntryCount(txn), try storage.segmentCount(txn),
             try txn.withCursor(on: storage.layout.archive) { try $0.last().map { try ArchiveKey(lmdbBytes: $0.key).generation } })
        }
        #expect(archived.0 == 16 * keys.count && archived.1 == keys.count && archived.2 == 1)
        for key in keys { #expect(try storage.texts(key) == (1...17).map { "\($0):entry \($0)" }) }
        #expect(try storage.statistics().logEntries == 17 * keys.count)
    }

    @Test("an instance's status is stored as a fixed byte (running 0, completed 1, failed 2, cancelled 3) in a state record of 54 bytes, and each reads back after a reopen")
    func statusBytes() throws {
        let dir = TemporaryDirectory("journal-status")
        let statuses: [(InstanceStatus, UInt8)] = [(.running, 0), (.completed, 1), (.failed, 2), (.cancelled, 3)]
        var keys: [UInt64] = []
        do {
            let storage = try LMDBStorage.open(path: dir.path)
            for (index, (status, _)) in statuses.enumerated() {
                keys.append(try #require(try storage.create(Records.new("s\(index)"))).key)
                _ = try storage.setStatus(id: "s\(index)", to: status, at: 2_000)
            }
        }
        let storage = try LMDBStorage.open(path: dir.path)
        for (index, (status, code)) in statuses.enumerated() {
            #expect(try storage.instance(id: "s\(index)")?.status == status)
            let record = try #require(try storage.environment.read { txn in try txn.get(keys[index], in: storage.layout.state) })
            #expect(record.count == 54)
            #expect(Array(record.prefix(2)) == [2, code])
        }
    }
}
