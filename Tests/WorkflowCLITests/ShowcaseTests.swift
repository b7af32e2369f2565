import Foundation
import TestSupport
import Testing

@Suite("The showcase (the README's first command)")
struct ShowcaseTests {
    @Test("the showcase runs the whole story and exits 0 only because every job finished as expected")
    func showcasePasses() throws {
        let dir = TemporaryDirectory("showcase")
        let showcase = ChildProcess.builtProduct("showcase")
        let child = try ChildProcess([dir.child("store")], executable: showcase, mergeStandardError: true)
        let lines = child.readRemainingLines(timeout: .seconds(120))
        let code = try child.waitForExit()
        #expect(code == 0, "\(lines.suffix(20).joined(separator: "\n"))")
        #expect(lines.contains { $0.hasPrefix("Showcase passed") })
        #expect(lines.contains("Step 2. Kill the service with SIGKILL in the middle of its uploads."))
        #expect(lines.filter { $0.contains("signal received") }.count == 3)
        #expect(lines.filter { $0.hasPrefix("  check: ") && $0.contains("1 signal; timer fired") }.count == 3)
        // It ends with the command that shows its store in the browser.
        #expect(lines.contains { $0.hasSuffix("wfctl serve \(dir.child("store"))") }, "\(lines.suffix(4))")
    }
}
