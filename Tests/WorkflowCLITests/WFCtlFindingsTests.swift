import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowExamples
import WorkflowLMDB

@Suite("wfctl's help, findings and messages (issue 22, 9 and 10)")
struct WFCtlFindingsTests {
    @Test("--help, help, CMD --help, help CMD and bare wfctl print help on stdout and exit 0")
    func helpEverywhere() throws {
        for arguments in [["--help"], ["help"], [], ["verify", "--help"], ["help", "state"], ["signals", "-h"]] {
            let path = ChildProcess.builtProduct("wfctl")
            let child = try ChildProcess(arguments, executable: path)  // stdout only
            let lines = child.readRemainingLines()
            let code = try child.waitForExit()
            #expect(code == 0, "wfctl \(arguments) exited \(code)")
            #expect(lines.contains { $0.hasPrefix("USAGE:") }, "wfctl \(arguments) printed \(lines)")
            #expect(!lines.joined().contains("CommandError"))
        }
    }

    @Test("state exits 1 on a divergence (a finding), and --no-digest-check replays past it")
    func stateDivergenceIsAFinding() throws {
        let dir = TemporaryDirectory("cli-state-divergence")
        try makeCounterStore(dir.path, snapshotEvery: nil)
        try plantDivergence(dir.path)
        let state = try wfctl(["state", dir.path, "planted"])
        #expect(state.code == 1, "\(state.lines)")
        #expect(state.lines.last?.contains("diverged") == true)
        let unchecked = try wfctl(["state", dir.path, "planted", "--no-digest-check"])
        #expect(unchecked.code == 0, "\(unchecked.lines)")
        let verify = try wfctl(["verify", dir.path, "planted", "--no-digest-check"])
        #expect(verify.code == 0, "\(verify.lines)")
    }

    @Test("verify says nothing was verified, and exits 2, when every instance's type is unregistered")
    func verifyAllSkipped() throws {
        let dir = TemporaryDirectory("cli-verify-skipped")
        do {
            let store = try WorkflowStore.open(path: dir.path)
            let host = try store.start(DurableCounter(), id: "other", configuration: DurableConfiguration(actions: DurableCounter.actions))
            host.rendering.sink.send(.init(amount: 3))
            host.stop()
        }
        let verify = try wfctl(["verify", dir.path])
        #expect(verify.code == 2, "\(verify.lines)")
        #expect(verify.lines.contains { $0.hasPrefix("other") && $0.contains("skipped") })
        #expect(verify.lines.last?.contains("nothing was verified") == true)
    }

    @Test("a directory without data.mdb, an empty data.mdb and a truncated one are each named for what they are, once")
    func storeFileMessages() throws {
        let dir = TemporaryDirectory("cli-store-files")
        mkdir(dir.child("empty-dir"), 0o755)
        let noData = try wfctl(["info", dir.child("empty-dir")])
        #expect(noData.code == 3 && noData.lines.count == 1)
        #expect(noData.lines.first?.contains("no data.mdb") == true, "\(noData.lines)")
        #expect(noData.lines.first?.contains("no such directory") == false)

        mkdir(dir.child("empty-file"), 0o755)
        FileManager.default.createFile(atPath: dir.child("empty-file/data.mdb"), contents: Data())
        let empty = try wfctl(["info", dir.child("empty-file")])
        #expect(empty.code == 3 && empty.lines.count == 1)
        #expect(empty.lines.first?.contains("data.mdb is empty") == true, "\(empty.lines)")
        #expect(empty.lines.first?.contains("Bad file descriptor") == false)

        try makeCounterStore(dir.child("store"), increments: 200)
        truncate(dir.child("store/data.mdb"), 12288)
        let truncated = try wfctl(["info", dir.child("store")])
        #expect(truncated.code == 3 && truncated.lines.count == 1, "\(truncated.lines)")
        let line = truncated.lines.first ?? ""
        #expect(line.contains("was truncated"))
        let recovery = "Restore the store from a copy"
        #expect(line.components(separatedBy: recovery).count == 2, "the recovery should appear once: \(line)")
    }

    @Test("check reads a whole store: intact exits 0; a damaged entry or a truncated file is reported, exit 1, without a crash")
    func checkWalksTheStore() throws {
        let dir = TemporaryDirectory("cli-check")
        try makeCounterStore(dir.child("store"), increments: 30)
        try makeCounterStore(dir.child("store"), id: "second", increments: 30)
        let intact = try wfctl(["check", dir.child("store")])
        #expect(intact.code == 0, "\(intact.lines)")
        #expect(intact.lines.first?.contains("2 instance(s), 62 log entries") == true, "\(intact.lines)")

        #expect(try PageDamage.growStoredSize(ofKey: PageDamage.logKey(instance: 1, sequence: 7), inDataFile: dir.child("store/data.mdb")) >= 1)
        let damaged = try wfctl(["check", dir.child("store"), "--json"])
        #expect(damaged.code == 1, "\(damaged.lines)")
        let report = try JSONSerialization.jsonObject(with: Data(damaged.lines.dropLast().joined().utf8)) as? [String: Any]
        let found = report?["damage"] as? [[String: Any]] ?? []
        #expect(found.contains { $0["area"] as? String == "log" && $0["instance"] as? String == "counter" && $0["sequence"] as? Int == 7 },
                "\(damaged.lines)")
        #expect(report?["entries"] as? Int == 6 + 31, "the walk went on past the damage to the next instance")

        truncate(dir.child("store/data.mdb"), 12288)
        let truncated = try wfctl(["check", dir.child("store")])
        #expect(truncated.code == 1, "\(truncated.lines)")
        #expect(truncated.lines.contains { $0.hasPrefix("file") && $0.contains("was truncated") })
    }

    @Test("wfctl check reports a page on which LMDB itself stops the walking process, with what was being read, and exits 1")
    func checkSurvivesLMDBStopping() throws {
        let dir = TemporaryDirectory("cli-check-abort")
        try makeCounterStore(dir.child("store"), increments: 400)
        #expect(try PageDamage.markLeafAsBranch(holdingKey: PageDamage.logKey(instance: 1, sequence: 150),
                                                inDataFile: dir.child("store/data.mdb")) >= 1)
        let damaged = try wfctl(["check", dir.child("store")])
        #expect(damaged.code == 1, "\(damaged.lines)")
        #expect(damaged.lines.contains { $0.hasPrefix("pages") && $0.contains("stopped the process") }, "\(damaged.lines)")
    }
}
