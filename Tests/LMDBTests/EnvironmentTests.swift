import Foundation
import LMDB
import TestSupport
import Testing

@Suite("Environment")
struct EnvironmentTests {
    @Test("opening a path that is already open returns the same environment")
    func oneEnvironmentPerPath() throws {
        let dir = TemporaryDirectory("same")
        let first = try Environment.open(path: dir.path)
        let second = try Environment.open(path: dir.path + "/.")
        #expect(first === second)
    }

    @Test("opening an open path with another configuration is a clear error")
    func secondOpenWithOtherConfiguration() throws {
        let dir = TemporaryDirectory("other-config")
        let first = try Environment.open(path: dir.path)
        let error = #expect(throws: LMDBError.self) {
            _ = try Environment.open(path: dir.path, configuration: .init(durability: .noSync))
        }
        #expect(error?.kind == .alreadyOpen)
        #expect(error?.path == dir.path)
        withExtendedLifetime(first) {}
    }

    @Test("opens refused for another configuration, racing with the last use of the open environment ending, neither deadlock nor crash")
    func refusedOpensRaceWithClose() throws {
        let dir = TemporaryDirectory("open-race")
        // In a child process: a deadlock there is a line that never comes, not a hung suite.
        let child = try ChildProcess(["lmdb-open-race", dir.path, "4"], mergeStandardError: true)
        let line = child.readLine(timeout: .seconds(40))
        if line == nil { child.kill() }
        #expect(line == "done")
        #expect(try child.waitForExit() == 0)
    }

    @Test("opening a path whose store files were deleted while this process has them open is refused with a typed error (not the earlier environment, whose writes would go to the deleted files); the earlier environment still reads its data, and once it is closed the path opens a new store")
    func storeDeletedWhileOpen() throws {
        let dir = TemporaryDirectory("deleted-while-open")
        // In a process of its own: the sanitizers keep tracking mutexes in a deleted lock file's
        // mapping, and this process runs every other test after it.
        let child = try ChildProcess(["lmdb-files-replaced", dir.path], mergeStandardError: true)
        let lines = child.readRemainingLines()
        #expect(try child.waitForExit() == 0, "\(lines)")
        #expect(lines == [
            "opened while open: alreadyOpen, Close the store opened at this path before deleting or replacing its files (stop its hosts, then WorkflowStore.close() or Environment.close()), then open it again",
            "earlier reads earlier",
            "after close: sees nothing",
        ])
    }

    @Test("close() closes at once while the environment is still held: its later uses fail with `closed`, closing again does nothing, and opening the path gives a new environment that reads what was committed")
    func closeWhileHeld() throws {
        let dir = TemporaryDirectory("close-held")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        try env.write { txn in try txn.put("kept", forKey: 1, in: db) }
        env.close()
        env.close()
        #expect(env.isClosed)
        expectLMDBError(.closed) { _ = try env.read { txn in try txn.get(1, in: db) } }
        expectLMDBError(.closed) { try env.write { txn in try txn.put("lost", forKey: 2, in: db) } }
        expectLMDBError(.closed) { _ = try env.info() }
        expectLMDBError(.closed) { try env.sync() }
        expectLMDBError(.closed) { _ = try env.database(named: "other") as Database<UInt64, String> }
        #expect(env.lastTransactionID == 0)
        let reopened = try Environment.open(path: dir.path)
        #expect(reopened !== env)
        let again: Database<UInt64, String> = try reopened.database(named: "kv")
        #expect(try reopened.read { txn in [try txn.get(1, in: again), try txn.get(2, in: again)] } == ["kept", nil])
    }

    @Test("close() waits for a transaction in progress on another thread, which completes; the transactions after it fail with `closed`")
    func closeWaitsForTransaction() async throws {
        let dir = TemporaryDirectory("close-waits")
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        let inside = DispatchSemaphore(value: 0)
        let writing = Task.detached {
            try env.write { txn in
                inside.signal()
                usleep(200_000)
                try txn.put("committed", forKey: 1, in: db)
            }
        }
        inside.wait()
        env.close()
        try await writing.value
        expectLMDBError(.closed) { try env.write { txn in try txn.put("refused", forKey: 2, in: db) } }
        let reopened = try Environment.open(path: dir.path)
        let again: Database<UInt64, String> = try reopened.database(named: "kv")
        #expect(try reopened.read { txn in [try txn.get(1, in: again), try txn.get(2, in: again)] } == ["committed", nil])
    }

    @Test("a closed environment can be opened again and keeps what was committed")
    func reopenAfterClose() throws {
        let dir = TemporaryDirectory("reopen")
        do {
            let env = try Environment.open(path: dir.path)
            let db: Database<UInt64, String> = try env.database(named: "kv")
            try env.write { txn in try txn.put("durable", forKey: 1, in: db) }
        }
        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, String> = try env.database(named: "kv")
        #expect(try env.read { txn in try txn.get(1, in: db) } == "durable")
    }

    @Test("a read-only environment reads committed data and refuses writes with a typed error")
    func readOnlyEnvironment() throws {
        let dir = TemporaryDirectory("readonly-env")
        do {
            let env = try Environment.open(path: dir.path)
            let db: Database<UInt64, String> = try env.database(named: "kv")
            try env.write { txn in try txn.put("v", forKey: 1, in: db) }
        }
        let env = try Environment.open(path: dir.path, configuration: .init(readOnly: true))
        let db: Database<UInt64, String> = try env.database(named: "kv")
        #expect(try env.read { txn in try txn.get(1, in: db) } == "v")
        expectLMDBError(.readOnly) {
            try env.write { txn in try txn.put("w", forKey: 2, in: db) }
        }
        expectLMDBError(.databaseNotFound) {
            let _: Database<UInt64, String> = try env.database(named: "missing")
        }
    }

    @Test("info reports map size, used pages and readers; stats count entries")
    func infoAndStatistics() throws {
        let dir = TemporaryDirectory("info")
        let env = try Environment.open(path: dir.path, configuration: .init(initialMapSize: 1 << 20))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "log")
        try env.write { txn throws in
            for key: UInt64 in 1...100 { try txn.append([UInt8](repeating: 1, count: 100), forKey: key, in: db) }
        }
        let info = try env.info()
        #expect(info.mapSize == 1 << 20)
        #expect(info.pageSize >= 4096)
        #expect(info.usedBytes > 100 * 100)
        #expect(info.lastTransactionID == env.lastTransactionID)
        let stats = try env.read { txn in try txn.statistics(of: db) }
        #expect(stats.entries == 100)
        #expect(stats.depth >= 1)
        #expect(env.maxKeySize == 511)
    }

    @Test("a compacting copy holds every record and is smaller after deletions")
    func compactingCopy() throws {
        let dir = TemporaryDirectory("copy")
        let env = try Environment.open(path: dir.child("store"))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "log")
        try env.write { txn throws in
            for key: UInt64 in 1...2000 { try txn.append(RecordPattern.bytes(for: key, size: 1000), forKey: key, in: db) }
        }
        try env.write { txn throws in
            for key: UInt64 in 1...1900 { try txn.delete(key, in: db) }
        }
        try env.copy(to: dir.child("compact"))
        let original = try FileManager.default.attributesOfItem(atPath: dir.child("store/data.mdb"))[.size] as! Int
        let compacted = try FileManager.default.attributesOfItem(atPath: dir.child("compact/data.mdb"))[.size] as! Int
        #expect(compacted < original / 4)
        let copy = try Environment.open(path: dir.child("compact"))
        let copied: Database<UInt64, [UInt8]> = try copy.database(named: "log")
        try copy.read { txn throws in
            #expect(try txn.count(of: copied) == 100)
            #expect(try txn.withValue(forKey: 2000, in: copied) { RecordPattern.matches($0, sequence: 2000, size: 1000) } == true)
        }
    }
}
