#if Postgres
import Dispatch
import Foundation
import Logging
import PostgresNIO
import Testing
import WorkflowLocks
import WorkflowPostgres
import WorkflowStorage

/// The fence of store format 16 (`wf_commit`): a commit of host H holds H's advisory lock
/// shared from its first statement to its `COMMIT`, and every change of an instance's claim away
/// from H (a takeover, a release, a delete) holds it exclusively, so the two never overlap. Here a
/// transaction of the test's own holds that lock as one side would, with what that side writes,
/// and the store's call on the other side must wait for it and then see what it left.
@Suite("PostgreSQL fence: a host's commits and the changes of its claims never overlap", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresFenceTests {
    /// An open transaction on a connection of the test's own, holding host `host`'s lock.
    final class HeldLock: Sendable {
        let connection: PostgresConnection
        let logger = Logger(label: "fence-test")

        init(host: Int64, shared: Bool) throws {
            connection = try PostgresBackendTests.connect(logger: logger)
            try run("BEGIN")
            try run("SELECT \(shared ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock")(\(host))")
        }

        func run(_ statement: String) throws {
            _ = try connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).wait()
        }

        /// Commits (the lock goes with it) and closes the connection.
        func commit() throws {
            try run("COMMIT")
            try connection.close().wait()
        }
    }

    /// `body` run on a thread of its own; ``value()`` waits for what it returned.
    final class Background<Value: Sendable>: Sendable {
        private let result = Lock<Result<Value, any Error>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ body: @escaping @Sendable () throws -> Value) {
            Thread.detachNewThread { [result, done] in
                let outcome = Result { try body() }
                result.withLock { $0 = outcome }
                done.signal()
            }
        }

        var isDone: Bool { result.withLock { $0 != nil } }

        func value() throws -> Value {
            #expect(done.wait(timeout: .now() + 60) == .success, "the call did not return within 60 s")
            guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
            return try outcome.get()
        }
    }

    /// Waits (up to 30 s) until a session waits for an advisory lock on `host`: the store's call
    /// started and stopped at the fence.
    static func awaitWaiter(on host: Int64) throws {
        let deadline = ContinuousClock.now + .seconds(30)
        // pg_locks shows a bigint key as its high 32 bits (classid) and low 32 bits (objid).
        let high = UInt32(truncatingIfNeeded: UInt64(bitPattern: host) >> 32), low = UInt32(truncatingIfNeeded: UInt64(bitPattern: host))
        while ContinuousClock.now < deadline {
            let rows = try PostgresBackendTests.sql(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = \(high) AND objid = \(low) AND objsubid = 1")
            if try rows.first?.decode(Int64.self) ?? 0 > 0 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("no session came to wait for host \(host)'s lock within 30 s")
    }

    /// A store with instance `a` (one entry) claimed by it, and the store's host id.
    static func storeWithClaimedInstance() throws -> (PostgresConfiguration, PostgresStorage, StoredInstance, Int64) {
        let configuration = PostgresBackendTests.fresh()
        let storage = try PostgresStorage.open(configuration)
        let a = try #require(try storage.create(Records.new("a", claim: Records.hostA)))
        let host = try #require(try PostgresBackendTests.sql(
            "SELECT owner_host FROM \(configuration.schema).wf_instance WHERE id = 'a'").first?.decode(Int64.self))
        #expect(host != 0)
        return (configuration, storage, a, host)
    }

    @Test("a commit that comes while a takeover of its instance holds the host's lock waits for it, then is refused: nothing of it is written")
    func commitAfterTakeover() throws {
        let (configuration, storage, a, host) = try Self.storeWithClaimedInstance()
        let takeover = try HeldLock(host: host, shared: false)
        try takeover.run("UPDATE \(configuration.schema).wf_instance SET owner_pid = 202, owner_start = 9, owner_token = 2, owner_host = 77 WHERE id = 'a'")
        let commit = Background {
            try storage.commit(CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(2, 3), updated: 3)
            ]))
        }
        try Self.awaitWaiter(on: host)
        #expect(!commit.isDone, "the commit went through while the takeover held the host's lock")
        try takeover.commit()
        #expect(try commit.value() == [.refused(current: Records.hostB)])
        #expect(try storage.texts(a.key) == ["1:entry 1"])
        storage.close()
    }

    @Test("a takeover waits for a commit of the host in flight; the instance it claims ends with that commit's entries")
    func takeoverAfterCommit() throws {
        let (configuration, storage, a, host) = try Self.storeWithClaimedInstance()
        // A commit in flight: the host's lock shared, its entry written, not yet committed.
        let inFlight = try HeldLock(host: host, shared: true)
        try inFlight.run("INSERT INTO \(configuration.schema).wf_log (instance_key, seq, record) VALUES (\(a.key), 2, 'entry 2')")
        let other = try PostgresStorage.open(configuration)
        let claim = Background { try other.claim(id: "a", as: Records.hostB, takingOverIf: { _ in true }) }
        try Self.awaitWaiter(on: host)
        #expect(!claim.isDone, "the takeover went through while a commit of the host was in flight")
        try inFlight.commit()
        guard case .claimed(let claimed) = try claim.value() else {
            Issue.record("the takeover did not claim the instance")
            return
        }
        #expect(claimed.lastSequence == 2, "the claim answered with a log that ends at \(claimed.lastSequence)")
        #expect(try other.texts(a.key) == ["1:entry 1", "2:entry 2"])
        // The first host's next commit is refused: the instance is no longer its own.
        let outcomes = try storage.commit(CommitRequest(durability: .synced, changes: [
            InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(3, 3), updated: 3)
        ]))
        #expect(outcomes == [.refused(current: Records.hostB)])
        other.close()
        storage.close()
    }

    @Test("a delete waits for a commit of the instance's host in flight, then removes what it wrote too")
    func deleteAfterCommit() throws {
        let (configuration, storage, a, host) = try Self.storeWithClaimedInstance()
        let inFlight = try HeldLock(host: host, shared: true)
        try inFlight.run("INSERT INTO \(configuration.schema).wf_log (instance_key, seq, record) VALUES (\(a.key), 2, 'entry 2')")
        let delete = Background { try storage.delete(id: "a") }
        try Self.awaitWaiter(on: host)
        #expect(!delete.isDone, "the delete went through while a commit of the host was in flight")
        try inFlight.commit()
        #expect(try delete.value())
        #expect(try PostgresBackendTests.sql("SELECT count(*) FROM \(configuration.schema).wf_log").first?.decode(Int64.self) == 0)
        storage.close()
    }

    @Test("entries of a sequence the log already holds fail the whole commit, as a gap does")
    func duplicateSequence() throws {
        let (_, storage, a, _) = try Self.storeWithClaimedInstance()
        let b = try #require(try storage.create(Records.new("b", claim: Records.hostA)))
        do {
            _ = try storage.commit(CommitRequest(durability: .synced, changes: [
                InstanceChanges(id: "b", key: b.key, claim: Records.hostA, entries: Records.range(2, 2), updated: 2),
                InstanceChanges(id: "a", key: a.key, claim: Records.hostA, entries: Records.range(1, 2), updated: 2),
            ]))
            Issue.record("the commit went through")
        } catch {
            #expect(error.kind == .invalidInput, "\(error)")
        }
        #expect(try storage.texts(a.key) == ["1:entry 1"])
        #expect(try storage.texts(b.key) == ["1:entry 1"])
        storage.close()
    }
}
#endif
