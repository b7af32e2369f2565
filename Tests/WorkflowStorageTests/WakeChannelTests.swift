import Foundation
import Synchronization
import Testing
@testable import WorkflowLMDB

#if canImport(Glibc)
import Glibc
#endif

/// The LMDB backend's cross-process wake-up socket.
@Suite("LMDB wake channel")
struct WakeChannelTests {
    @Test("a wake channel that cannot bind its socket closes that socket once: descriptors another thread opens meanwhile stay usable")
    func failedBindClosesOnce() throws {
        // A store path whose wake directory cannot be made (it is a file), so binding fails.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wake-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: file) }

        let stop = Atomic<Bool>(false)
        let opened = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            while !stop.load(ordering: .relaxed) {
                if WakeChannel(storePath: file) != nil { opened.add(1, ordering: .relaxed) }
            }
        }
        // Meanwhile this thread opens pipes and uses each: a socket closed twice by the other
        // thread would close one of them under it (the kernel hands out the lowest free number).
        var broken: [String] = []
        for _ in 0..<50_000 where broken.count < 5 {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else {
                broken.append("pipe: errno \(errno)")
                continue
            }
            var byte: UInt8 = 7
            if write(fds[1], &byte, 1) != 1 { broken.append("write to \(fds[1]): errno \(errno)") }
            else if read(fds[0], &byte, 1) != 1 { broken.append("read from \(fds[0]): errno \(errno)") }
            close(fds[0])
            close(fds[1])
        }
        stop.store(true, ordering: .relaxed)
        done.wait()
        #expect(opened.load(ordering: .relaxed) == 0, "no channel binds in a file")
        #expect(broken.isEmpty, "descriptors closed under this thread: \(broken)")
    }
}
