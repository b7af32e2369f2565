import Foundation
import LMDB
import TestSupport
import Testing

@Suite("Crash safety")
struct CrashTests {
    @Test(
        "a writer killed with SIGKILL loses no acknowledged commit, leaves no partial record, and the store takes new writes",
        arguments: ["strict", "noMetaSync", "noSync"]
    )
    func killedWriter(durability: String) throws {
        let dir = TemporaryDirectory("crash-\(durability)")
        var acknowledged: UInt64 = 0
        for round in 0..<4 {
            let child = try ChildProcess(["lmdb-append-loop", dir.path, durability])
            guard let ready = child.readLine(), ready.hasPrefix("ready ") else {
                Issue.record("child did not start in round \(round)")
                return
            }
            #expect(UInt64(ready.dropFirst(6))! >= acknowledged + 1)
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 20...250))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) {
                if line.hasPrefix("committed "), let sequence = UInt64(line.dropFirst(10)) { acknowledged = sequence }
            }
            child.kill()
            // Lines already written to the pipe before the kill are acknowledgements too.
            for line in child.readRemainingLines(timeout: .seconds(5)) where line.hasPrefix("committed ") {
                acknowledged = UInt64(line.dropFirst(10))!
            }
            #expect(try child.waitForExit() == 128 + SIGKILL)
        }
        #expect(acknowledged > 0)

        let env = try Environment.open(path: dir.path)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        var expected: UInt64 = 1
        try env.read { txn throws in
            try txn.forEach(in: db) { key, value throws in
                #expect(try UInt64(lmdbBytes: key) == expected)
                #expect(RecordPattern.matches(value, sequence: expected), "record \(expected) is torn")
                expected += 1
                return true
            }
        }
        #expect(expected - 1 >= acknowledged, "acknowledged \(acknowledged) but found \(expected - 1)")
        let next = expected
        try env.write { txn in try txn.append(RecordPattern.bytes(for: next), forKey: next, in: db) }
        #expect(try env.read { txn in try txn.count(of: db) } == Int(next))
    }
}
