import Dispatch
import Foundation
import LMDB
import TestSupport
import Testing
import WorkflowLocks

/// The store's writer waited for with a bound (issue 62, point 6): LMDB alone waits without end
/// behind a process stopped in a commit.
@Suite("The store's writer: a wait with a bound, the holder named")
struct WriterWaitTests {
    /// Sends SIGSTOP to `child` and waits until the process table shows it stopped.
    private func stop(_ child: ChildProcess) throws {
        child.kill(SIGSTOP)
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessStatus.read(child.pid)?.isStopped != true {
            guard ContinuousClock.now < deadline else { throw ChildProcessError.didNotExit(after: .seconds(10), "never stopped: \(child.diagnosis)") }
            usleep(200)
        }
    }

    @Test("a writer stopped at 20 random moments: each write of this process answers within the wait, busy ones naming the stopped process; after SIGCONT it goes on, nothing lost or doubled")
    func stoppedWriter() throws {
        let dir = TemporaryDirectory("writer-stopped")
        let wait = Duration.milliseconds(400)
        let env = try Environment.open(path: dir.path, configuration: .init(writerWait: wait))
        let probes: Database<UInt64, [UInt8]> = try env.database(named: "probes")
        let records: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let child = try ChildProcess(["lmdb-slow-commits", dir.path, "5"])
        #expect(child.readLine() == "ready")
        var lastCommitted: UInt64 = 0
        func committed(_ line: String) -> UInt64? { line.hasPrefix("committed ") ? UInt64(line.dropFirst(10)) : nil }
        var busy = 0, written: [UInt64] = [], slowest = Duration.zero
        for round in UInt64(1)...20 {
            usleep(UInt32.random(in: 5_000...30_000))
            try stop(child)
            let started = ContinuousClock.now
            do {
                try env.write { txn in try txn.put([UInt8(round)], forKey: round, in: probes) }
                written.append(round)
            } catch let error as LMDBError where error.kind == .writerBusy {
                busy += 1
                #expect(error.holder?.pid == child.pid)
                #expect(error.holder?.state == .stopped)
                #expect(error.holder?.isThisProcess == false)
                #expect(error.description.contains("process \(child.pid) (wf-test-child), stopped"), "\(error)")
                #expect(error.recovery.contains("kill -CONT \(child.pid)"))
            }
            slowest = max(slowest, ContinuousClock.now - started)
            child.kill(SIGCONT)
            // The child goes on: a commit after the stop.
            let target = lastCommitted
            let line = child.readLine(until: { line in
                if let number = committed(line) { lastCommitted = max(lastCommitted, number) }
                return lastCommitted > target
            })
            #expect(line != nil, "no commit after SIGCONT: \(child.diagnosis)")
        }
        // The writer is held for 5 ms of every few more: most stops land inside a commit.
        #expect(busy >= 5, "only \(busy) of 20 writes found the writer held")
        #expect(slowest < wait + .milliseconds(800), "a write took \(slowest) with a wait of \(wait)")
        child.kill()
        _ = try child.waitForExit()
        // Nothing lost or doubled: the child's records dense from 1 and each as written, through
        // at least the last it reported; the probes that succeeded and no others.
        let (count, probesFound) = try env.read { txn throws in
            var expected: UInt64 = 1
            try txn.forEach(in: records) { key, value throws in
                #expect(try UInt64(lmdbBytes: key) == expected)
                #expect(RecordPattern.matches(value, sequence: expected))
                expected += 1
                return true
            }
            var found: [UInt64] = []
            try txn.forEach(in: probes) { key, _ throws in
                found.append(try UInt64(lmdbBytes: key))
                return true
            }
            return (expected - 1, found)
        }
        #expect(count >= lastCommitted)
        #expect(probesFound == written)
    }

    @Test("a thread of this process waits at most the wait behind another thread's long write, is told it is this process's, and both the write and the wait are reported")
    func longWriteOfThisProcess() throws {
        let dir = TemporaryDirectory("writer-thread")
        let env = try Environment.open(path: dir.path, configuration: .init(writerWait: .milliseconds(200), slowWrite: .milliseconds(100)))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let reports = Lock<[SlowWrite]>([])
        env.reportSlowWrites { slow in reports.withLock { $0.append(slow) } }
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? env.write { txn in
                try txn.put([1], forKey: 1, in: db)
                holding.signal()
                release.wait()
            }
            done.signal()
        }
        holding.wait()
        let started = ContinuousClock.now
        #expect {
            try env.write { txn in try txn.put([2], forKey: 2, in: db) }
        } throws: { error in
            guard let error = error as? LMDBError, error.kind == .writerBusy, let holder = error.holder else { return false }
            return holder.isThisProcess && holder.pid == getpid() && (holder.heldFor ?? .zero) >= .milliseconds(150)
                && error.recovery.contains("Another thread of this process")
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        // The watchdog reports the long write once it is past the bound.
        let deadline = ContinuousClock.now + .seconds(5)
        while reports.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { usleep(10_000) }
        release.signal()
        done.wait()
        // One report of the held write (the watchdog's), one of the wait (the waiting thread's).
        let seen = reports.withLock { $0 }
        #expect(seen.count == 2, "\(seen)")
        #expect(seen.contains { slow in
            if case .held(let path, let heldFor) = slow { return path == dir.path && heldFor >= .milliseconds(100) }
            return false
        }, "\(seen)")
        #expect(seen.contains { slow in
            if case .waiting(_, let waited, let holder) = slow { return waited >= .milliseconds(100) && holder.isThisProcess }
            return false
        }, "\(seen)")
        // The writer is free again: the next write goes through at once.
        try env.write { txn in try txn.put([2], forKey: 2, in: db) }
        #expect(try env.read { txn in try txn.get(2, in: db) } == [2])
    }

    @Test("a write waiting for another process past the slow-write bound is reported, with the holder")
    func waitIsReported() throws {
        let dir = TemporaryDirectory("writer-wait-reported")
        let env = try Environment.open(path: dir.path, configuration: .init(writerWait: .seconds(1), slowWrite: .milliseconds(150)))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "probes")
        _ = try env.database(named: "records") as Database<UInt64, [UInt8]>
        let reports = Lock<[SlowWrite]>([])
        env.reportSlowWrites { slow in reports.withLock { $0.append(slow) } }
        let child = try ChildProcess(["lmdb-slow-commits", dir.path, "50"])
        #expect(child.readLine() == "ready")
        // Stopped while it holds the writer: a commit of 50 ms, so wait for one to begin.
        var held = false
        for _ in 0..<50 where !held {
            usleep(20_000)
            try stop(child)
            do {
                try env.write { txn in try txn.put([1], forKey: 1, in: db) }
            } catch let error as LMDBError where error.kind == .writerBusy {
                held = true
            }
            child.kill(SIGCONT)
        }
        child.kill()
        _ = try child.waitForExit()
        #expect(held)
        let waits = reports.withLock { $0 }.compactMap { slow -> WriterHolder? in
            if case .waiting(_, let waited, let holder) = slow, waited >= .milliseconds(150) { return holder }
            return nil
        }
        #expect(waits.contains { $0.pid == child.pid && $0.state == .stopped }, "\(reports.withLock { $0 })")
    }

    @Test("a writer killed while it holds the writer leaves it to the next, at once (the lock is robust), its write dropped whole")
    func killedHolder() throws {
        let dir = TemporaryDirectory("writer-killed")
        let env = try Environment.open(path: dir.path, configuration: .init(writerWait: .seconds(5)))
        let probes: Database<UInt64, [UInt8]> = try env.database(named: "probes")
        let records: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let child = try ChildProcess(["lmdb-slow-commits", dir.path, "300"])
        #expect(child.readLine() == "ready")
        // Inside its second commit (each holds the writer for 300 ms).
        #expect(child.readLine() == "committed 1")
        usleep(100_000)
        child.kill()
        _ = try child.waitForExit()
        let started = ContinuousClock.now
        try env.write { txn in try txn.put([1], forKey: 1, in: probes) }
        #expect(ContinuousClock.now - started < .seconds(2))
        let count = try env.read { txn in try txn.count(of: records) }
        #expect(count >= 1 && count <= 2)
    }
}

