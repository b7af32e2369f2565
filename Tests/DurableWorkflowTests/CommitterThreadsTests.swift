import Dispatch
@testable import DurableWorkflow
import Foundation
import Synchronization
import Testing

/// The threads background committers run on where commits wait on round trips: reused while
/// parked, as many as run at once, ended once idle.
struct CommitterThreadsTests {
    /// Waits until `condition` holds, for 10 s at most; whether it held.
    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return true
    }

    /// Runs a job that only says it ran on `threads`; whether it ran within 10 s.
    func ranOnce(on threads: CommitterThreads) -> Bool {
        let done = DispatchSemaphore(value: 0)
        threads.run { done.signal() }
        return done.wait(timeout: .now() + 10) == .success
    }

    @Test("a committer started while a thread is parked runs on that thread, not a new one")
    func parkedThreadIsReused() {
        let threads = CommitterThreads(idleLimit: .seconds(30))
        for round in 1...3 {
            #expect(ranOnce(on: threads), "job \(round) never ran")
            #expect(eventually { threads.parkedThreads == 1 })
        }
        #expect(threads.threadsStarted == 1)
    }

    @Test("committers started at once run at once, one on the parked thread and one on a new thread: each waits for the other")
    func committersRunTogether() {
        let threads = CommitterThreads(idleLimit: .seconds(30))
        #expect(ranOnce(on: threads))
        #expect(eventually { threads.parkedThreads == 1 })
        let first = DispatchSemaphore(value: 0), second = DispatchSemaphore(value: 0)
        let met = Atomic(0)
        threads.run {
            first.signal()
            if second.wait(timeout: .now() + 10) == .success { met.add(1, ordering: .relaxed) }
        }
        threads.run {
            second.signal()
            if first.wait(timeout: .now() + 10) == .success { met.add(1, ordering: .relaxed) }
        }
        #expect(eventually { threads.parkedThreads == 2 })
        #expect(met.load(ordering: .relaxed) == 2)
        #expect(threads.threadsStarted == 2)
    }

    @Test("a parked thread ends once it waited its idle limit; the next committer gets a new one")
    func idleThreadEnds() {
        let threads = CommitterThreads(idleLimit: .milliseconds(20))
        #expect(ranOnce(on: threads))
        #expect(eventually { threads.threadsEnded == 1 })
        #expect(threads.parkedThreads == 0)
        #expect(ranOnce(on: threads))
        #expect(threads.threadsStarted == 2)
    }

    @Test("committers started from many threads while parked threads give up: every one runs, once")
    func startsRaceWithIdleEnds() {
        let threads = CommitterThreads(idleLimit: .microseconds(200))
        let ran = Atomic(0), total = 4 * 500
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for index in 0..<500 {
                threads.run { ran.add(1, ordering: .relaxed) }
                if index % 50 == 0 { Thread.sleep(forTimeInterval: 0.001) }
            }
        }
        #expect(eventually { ran.load(ordering: .relaxed) == total })
        #expect(ran.load(ordering: .relaxed) == total)
        #expect(eventually { threads.threadsEnded == threads.threadsStarted })
        #expect(threads.parkedThreads == 0)
    }
}
