import Foundation
import TestSupport
import Testing
import WorkflowSignals

@Suite("The README's signal demo")
struct SignalDemoTests {
    var demo: String { ChildProcess.builtProduct("signal-demo") }

    @Test("a consumer killed with SIGKILL between posts gets every version once after it restarts")
    func consumerSurvivesKill() throws {
        let dir = TemporaryDirectory("signal-demo")
        let store = dir.child("store"), signal = SignalID().description
        let consumer = try ChildProcess(["consume", store, signal], executable: demo)
        #expect(consumer.readLine() == "waiting for \(signal)")
        for text in ["upload 50%", "upload 100%"] {
            let poster = try ChildProcess(["post", store, signal, text], executable: demo)
            _ = poster.readRemainingLines()
            #expect(try poster.waitForExit() == 0)
        }
        #expect(consumer.readLine() == "version 1: upload 50%")
        #expect(consumer.readLine() == "version 2: upload 100%")
        // The print happens inside the delivery's transaction, before its commit: wait for the
        // commit, or a kill in between would (correctly) redeliver version 2 after the restart.
        let observer = try SignalCenter.open(path: store, processIdentity: "test-observer")
        #expect(eventually { (try? observer.consumers().first?.lastDelivered) == 2 })
        try observer.stop()
        consumer.kill()
        try consumer.waitForExit()
        for arguments in [["checksum verified"], ["upload finished", "--final"]] {
            let poster = try ChildProcess(["post", store, signal] + arguments, executable: demo)
            _ = poster.readRemainingLines()
            #expect(try poster.waitForExit() == 0)
        }
        let restarted = try ChildProcess(["consume", store, signal], executable: demo)
        #expect(restarted.readRemainingLines() == [
            "waiting for \(signal)", "version 3: checksum verified", "version 4: upload finished (final)",
            "done: the consumer was removed after the final version; 4 versions recorded",
        ])
    }
}
