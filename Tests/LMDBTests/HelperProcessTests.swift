import Foundation
import TestSupport
import Testing

@Suite("The test helper process")
struct HelperProcessTests {
    /// Whether process `pid` has ended (gone, or a zombie nobody has reaped yet).
    private func hasEnded(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state == "Z" || state == "X"
    }

    @Test("a helper whose test process is gone ends by itself instead of running on")
    func orphanedHelperEnds() throws {
        let parent = try ChildProcess(["spawn-idle"])
        let line = try #require(parent.readLine())
        let pid = try #require(pid_t(line.dropFirst("child ".count)), "\(line)")
        defer { if !hasEnded(pid) { kill(pid, SIGKILL) } }
        #expect(!hasEnded(pid))
        parent.kill()
        _ = try parent.waitForExit()
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, !hasEnded(pid) { usleep(20_000) }
        #expect(hasEnded(pid), "the helper \(pid) still runs 10 s after its parent was killed")
    }
}
