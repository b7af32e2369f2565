import Foundation
import TestSupport
import Testing

@Suite("The README's durable counter demo")
struct CounterDemoTests {
    var demoPath: String { ChildProcess.builtProduct("counter-demo") }

    @Test("counter-demo killed with SIGKILL resumes from the last count it printed")
    func survivesKill() throws {
        let dir = TemporaryDirectory("demo")
        let store = dir.child("store")
        let first = try ChildProcess([store], executable: demoPath)
        #expect(first.readLine() == "started: count = 0")
        var last = 0
        for _ in 0..<3 {
            let line = first.readLine() ?? ""
            #expect(line.hasPrefix("count = "))
            last = Int(line.dropFirst(8)) ?? -1
        }
        first.kill()
        for line in first.readRemainingLines(timeout: .seconds(5)) where line.hasPrefix("count = ") { last = Int(line.dropFirst(8)) ?? -1 }
        try first.waitForExit()

        let second = try ChildProcess([store, "--ticks", "1"], executable: demoPath)
        let resumed = second.readLine() ?? ""
        let count = Int(resumed.dropFirst("resumed: count = ".count)) ?? -1
        #expect(resumed.hasPrefix("resumed: count = "))
        #expect(count >= last && count <= last + 1, "printed \(last) before the kill, resumed at \(count)")
        #expect(second.readLine() == "count = \(count + 1)")
        #expect(try second.waitForExit() == 0)
    }
}
