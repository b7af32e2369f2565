import Dispatch
import Testing
import WorkflowLocks

@Suite("Lock: a value behind a pthread mutex")
struct LockTests {
    @Test("increments from 4 threads under the lock are never lost, and withLock returns what its body returns")
    func exclusive() {
        let counter = Lock(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 40_000)
    }

    @Test("an error thrown by the body is rethrown, typed, and the lock is released")
    func rethrowsTyped() {
        struct Refused: Error {}
        let lock = Lock([1, 2])
        #expect(throws: Refused.self) { try lock.withLock { (_: inout [Int]) throws(Refused) in throw Refused() } }
        #expect(lock.withLock { $0.append(3); return $0 } == [1, 2, 3])
    }

    @Test("take(leaving:) hands over the value itself, unshared, and leaves the placeholder until the value is put back")
    func take() {
        let lock = Lock([1, 2, 3])
        var taken = lock.take(leaving: [])
        #expect(taken == [1, 2, 3])
        #expect(lock.withLock { $0 } == [])
        // Moved, not copied: the taken array's storage is referenced once, so a change needs no copy.
        let before = taken.withUnsafeBufferPointer { $0.baseAddress }
        taken[0] = 9
        #expect(taken.withUnsafeBufferPointer { $0.baseAddress } == before)
        lock.withLock { $0 = taken }
        #expect(lock.withLock { $0 } == [9, 2, 3])
    }

    @Test("withLockIfAvailable runs its body when the lock is free and returns nil at once while another thread holds it")
    func tryLock() {
        let lock = Lock(0)
        #expect(lock.withLockIfAvailable { $0 += 1; return $0 } == 1)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            lock.withLock { _ in
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        #expect(lock.withLockIfAvailable { $0 } == nil)
        release.signal()
        done.wait()
        #expect(lock.withLockIfAvailable { $0 } == 1)
    }

    @Test("withLock(waitingAtMost:) gives up after the wait while another thread holds the lock, and takes a free lock at once")
    func timedWait() {
        let lock = Lock(0)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            lock.withLock { value in
                value = 1
                held.signal()
                release.wait()
            }
            released.signal()
        }
        held.wait()
        let started = ContinuousClock.now
        let refused = lock.withLock(waitingAtMost: .milliseconds(200)) { $0 }
        let waited = ContinuousClock.now - started
        #expect(refused == nil)
        #expect(waited >= .milliseconds(150) && waited < .seconds(5), "waited \(waited)")
        release.signal()
        released.wait()
        #expect(lock.withLock(waitingAtMost: .zero) { $0 } == 1)
    }
}

