import DurableWorkflow
import Foundation
import InMemoryTracing
import LMDB
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowExamples
import WorkflowLMDB
import WorkflowSignals

/// Runs the built `wfctl` and returns its exit code and output (stdout and stderr).
func wfctl(_ arguments: [String], input: String? = nil) throws -> (code: Int32, lines: [String]) {
    try ChildProcess.run(product: "wfctl", arguments, input: input)
}

/// A store with a counter instance of `increments` actions; returns the live state after each sequence.
@discardableResult
func makeCounterStore(_ path: String, id: String = "counter", increments: Int = 12, snapshotEvery: Int? = 5) throws -> [UInt64: Int] {
    let store = try WorkflowStore.open(path: path)
    let host = try store.start(Counter(), id: id, configuration: DurableConfiguration(actions: Counter.actions, snapshotEvery: snapshotEvery))
    var live: [UInt64: Int] = [1: host.rendering.count]
    for index in 0..<increments {
        host.rendering.increment.send(Counter.Increment())
        live[UInt64(index + 2)] = host.rendering.count
    }
    host.stop()
    return live
}

/// Imports instance "planted": a copy of "counter"'s log whose entry 4 records a wrong digest.
func plantDivergence(_ path: String) throws {
    let store = try WorkflowStore.open(path: path)
    let entries = try store.entries(of: "counter").map { entry in
        entry.sequence != 4 ? entry : LogEntry(
            sequence: 4, time: entry.time, origin: entry.origin, nodePath: entry.nodePath, actionTag: entry.actionTag,
            actionVersion: entry.actionVersion, payload: entry.payload, digest: (entry.digest ?? 0) ^ 0xdead)
    }
    try store.importInstance(id: "planted", workflowType: String(reflecting: Counter.self), status: .running, created: .now(), entries: entries)
}

@Suite("wfctl, run as a separate process")
struct WFCtlTests {
    @Test("info, list, log and state print tables and JSON")
    func readCommands() throws {
        let dir = TemporaryDirectory("cli-read")
        try makeCounterStore(dir.path)
        let info = try wfctl(["info", dir.path])
        #expect(info.code == 0)
        #expect(info.lines.contains { $0.hasPrefix("instances") && $0.hasSuffix(" 1") })
        #expect(info.lines.contains { $0.hasPrefix("log entries") && $0.hasSuffix(" 13") })
        let infoJSON = try JSONSerialization.jsonObject(with: Data(try wfctl(["info", dir.path, "--json"]).lines.joined().utf8)) as! [String: Any]
        #expect(infoJSON["instances"] as? Int == 1)
        #expect(infoJSON["formatVersion"] as? Int == Int(LMDBStorage.formatVersion))

        let list = try wfctl(["list", dir.path])
        #expect(list.lines.first?.hasPrefix("ID") == true)
        #expect(list.lines.dropFirst().first?.hasPrefix("counter  Counter  running  -        13") == true)
        let listJSON = try JSONSerialization.jsonObject(with: Data(try wfctl(["list", dir.path, "--json"]).lines.joined().utf8)) as! [[String: Any]]
        #expect(listJSON.first?["lastSequence"] as? Int == 13)
        #expect(try wfctl(["list", dir.path, "--status", "completed"]).lines.count == 1)

        let log = try wfctl(["log", dir.path, "counter", "--from", "2", "--to", "3"])
        #expect(log.code == 0)
        #expect(log.lines.count == 3)
        #expect(log.lines[1].hasPrefix("2 "))
        #expect(log.lines[1].contains(" sink ") && log.lines[1].hasSuffix("/Counter  demo.increment@1  {}"))
        let logJSON = try wfctl(["log", dir.path, "counter", "--json"]).lines
        #expect(logJSON.count == 13)
        let first = try JSONSerialization.jsonObject(with: Data(logJSON[0].utf8)) as! [String: Any]
        #expect(first["origin"] as? String == "props" && first["sequence"] as? Int == 1)

        let state = try wfctl(["state", dir.path, "counter"])
        #expect(state.lines.first?.hasPrefix("counter at sequence 13") == true)
        #expect(state.lines.last == "/Counter  12")

        // What changed between two points, as a table and as JSON (docs/wfctl-json.md).
        let diff = try wfctl(["state", dir.path, "counter", "--at", "7", "--diff", "3"])
        #expect(diff.code == 0 && diff.lines.first == "counter from sequence 3 to 7: 1 change", "\(diff.lines)")
        #expect(diff.lines.last?.split(separator: " ", omittingEmptySubsequences: true) == ["/Counter", "(all)", "changed", "2", "6"], "\(diff.lines)")
        let diffJSON = try JSONSerialization.jsonObject(with: Data(try wfctl(["state", dir.path, "counter", "--at", "7", "--diff", "3", "--json"]).lines.joined().utf8)) as! [String: Any]
        #expect(diffJSON["from"] as? Int == 3 && diffJSON["to"] as? Int == 7)
        #expect((diffJSON["changes"] as? [[String: Any]])?.first?["before"] as? Int == 2)
    }

    @Test("state --at N equals the live state right after action N")
    func timeTravel() throws {
        let dir = TemporaryDirectory("cli-state")
        let live = try makeCounterStore(dir.path)
        for sequence: UInt64 in [1, 2, 5, 6, 11, 13] {
            let output = try wfctl(["state", dir.path, "counter", "--at", "\(sequence)", "--json"])
            #expect(output.code == 0)
            let report = try JSONSerialization.jsonObject(with: Data(output.lines.joined().utf8)) as! [String: Any]
            let nodes = report["nodes"] as! [[String: Any]]
            #expect(nodes.first?["state"] as? Int == live[sequence], "at \(sequence)")
        }
    }

    @Test("verify passes a consistent store and finds a planted divergence, exiting 1")
    func verifyFindsDivergence() throws {
        let dir = TemporaryDirectory("cli-verify")
        try makeCounterStore(dir.path)
        #expect(try wfctl(["verify", dir.path]).code == 0)
        try plantDivergence(dir.path)
        let verify = try wfctl(["verify", dir.path])
        #expect(verify.code == 1)
        #expect(verify.lines.contains { $0.hasPrefix("planted") && $0.contains("diverged") && $0.contains("sequence 4") })
        #expect(verify.lines.contains { $0.hasPrefix("counter") && $0.contains(" ok ") })
        #expect(verify.lines.last == "wfctl: 1 instance(s) diverged: planted")
    }

    @Test("log --follow prints entries another process appends, within a second")
    func follow() throws {
        let dir = TemporaryDirectory("cli-follow")
        let store = try WorkflowStore.open(path: dir.path)
        let host = try store.start(Counter(), id: "counter", configuration: DurableConfiguration(actions: Counter.actions))
        let path = ChildProcess.builtProduct("wfctl")
        let follower = try ChildProcess(["log", dir.path, "counter", "--follow"], executable: path, mergeStandardError: true)
        #expect(follower.readLine()?.hasPrefix("SEQ") == true)
        #expect(follower.readLine()?.hasPrefix("1 ") == true)
        for expected in 2...4 {
            host.rendering.increment.send(Counter.Increment())
            let line = follower.readLine(timeout: .seconds(1))
            #expect(line?.hasPrefix("\(expected) ") == true, "got \(line ?? "nothing") within a second")
        }
        follower.kill()
        try follower.waitForExit()
        host.stop()
    }

    @Test("export then import gives an identical log; fork keeps the first N entries; compact writes a smaller copy")
    func exportImportForkCompact() throws {
        let dir = TemporaryDirectory("cli-export")
        try makeCounterStore(dir.path)
        let exported = try wfctl(["export", dir.path])
        #expect(exported.code == 0)
        let file = dir.child("export.jsonl")
        try (exported.lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let imported = try wfctl(["import", dir.child("copy")], input: file)
        #expect(imported.lines == ["imported counter: 13 entries"])
        let original = try WorkflowStore.open(path: dir.path), copy = try WorkflowStore.open(path: dir.child("copy"))
        #expect(try copy.entries(of: "counter") == original.entries(of: "counter"))
        #expect(try copy.state(of: "counter", as: Counter.self, configuration: DurableConfiguration(actions: Counter.actions)).digest
                == original.state(of: "counter", as: Counter.self, configuration: DurableConfiguration(actions: Counter.actions)).digest)

        let fork = try wfctl(["fork", dir.child("copy"), "counter", "--at", "7", "--as", "incident"])
        #expect(fork.code == 0)
        let forked = try copy.entries(of: "incident")
        #expect(Array(forked.prefix(7)) == Array(try original.entries(of: "counter").prefix(7)))
        #expect(forked.count == 8 && forked.last?.actionTag == ControlEntry.pauseTag)
        #expect(try copy.instance(id: "incident")?.status == .paused)

        let compact = try wfctl(["compact", dir.path, dir.child("compact")])
        #expect(compact.code == 0)
        #expect(try WorkflowStore.open(path: dir.child("compact")).entries(of: "counter").count == 13)
    }

    @Test("a store made by import opens with every command (verify, state, signals read the signal tables); --quiet prints one summary line (issue 59, point 8)")
    func importMakesACompleteStore() throws {
        let dir = TemporaryDirectory("cli-import-complete")
        try makeCounterStore(dir.path)
        let exported = try wfctl(["export", dir.path])
        let file = dir.child("export.jsonl")
        try (exported.lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let imported = try wfctl(["import", dir.child("copy"), "--quiet"], input: file)
        #expect(imported.code == 0 && imported.lines == ["imported 1 instance, 13 entries"], "\(imported.lines)")
        for command in [["verify"], ["state", "counter"], ["signals"], ["list"], ["describe", "counter"]] {
            let result = try wfctl([command[0], dir.child("copy")] + command.dropFirst())
            #expect(result.code == 0, "\(command) exited \(result.code): \(result.lines)")
        }
        // A service's own tool opens the signals of the store read-only for its types' configurations.
        let readOnly = try WorkflowStore.open(path: dir.child("copy"), configuration: .readOnly)
        let center = try SignalCenter.open(store: readOnly, processIdentity: "tool", configuration: .init(pollInterval: .seconds(3600)))
        try center.stop()
    }

    @Test("wfctl against a store another process is writing neither blocks nor disturbs it")
    func liveStore() throws {
        let dir = TemporaryDirectory("cli-live")
        let demo = ChildProcess.builtProduct("counter-demo")
        let writer = try ChildProcess([dir.child("store")], executable: demo)
        #expect(writer.readLine() == "started: count = 0")
        for _ in 0..<5 {
            for command in [["list"], ["info"], ["log", "counter"], ["state", "counter"], ["verify"]] {
                let result = try wfctl([command[0], dir.child("store")] + command.dropFirst())
                #expect(result.code == 0, "\(command) exited \(result.code): \(result.lines)")
            }
        }
        let before = writer.readLine()
        #expect(before?.hasPrefix("count = ") == true)
        writer.kill()
        try writer.waitForExit()
        #expect(try wfctl(["verify", dir.child("store")]).code == 0)
    }

    @Test("bad input: one clear line on stderr, exit 2 (usage) or 3 (store)")
    func badInput() throws {
        let dir = TemporaryDirectory("cli-bad")
        try makeCounterStore(dir.child("store"))
        // A garbage data file.
        mkdir(dir.child("garbage"), 0o755)
        try Data(repeating: 0x5A, count: 65536).write(to: URL(fileURLWithPath: dir.child("garbage/data.mdb")))
        let garbage = try wfctl(["list", dir.child("garbage")])
        #expect(garbage.code == 3)
        #expect(garbage.lines.count == 1 && garbage.lines[0].hasPrefix("wfctl: ") && garbage.lines[0].contains("not a store"))
        // A store of a newer format.
        do {
            let env = try Environment.open(path: dir.child("newer"))
            let meta: Database<String, [UInt8]> = try env.database(named: "meta")
            try env.write { txn in try txn.put([99, 0, 0, 0], forKey: "format", in: meta) }
        }
        let newer = try wfctl(["info", dir.child("newer")])
        #expect(newer.code == 3 && newer.lines.count == 1 && newer.lines[0].contains("format 99"))
        let unknown = try wfctl(["log", dir.child("store"), "nope"])
        #expect(unknown.code == 2 && unknown.lines.count == 1 && unknown.lines[0].contains("no instance \"nope\""))
        let range = try wfctl(["state", dir.child("store"), "counter", "--at", "99"])
        #expect(range.code == 2 && range.lines.count == 1 && range.lines[0].contains("sequences 1 to 13"))
        // An instance whose type this wfctl does not register.
        do {
            let store = try WorkflowStore.open(path: dir.child("store"))
            let host = try store.start(DurableCounter(), id: "other", configuration: DurableConfiguration(actions: DurableCounter.actions))
            host.rendering.sink.send(.init(amount: 3))
            host.stop()
        }
        let unregistered = try wfctl(["state", dir.child("store"), "other"])
        #expect(unregistered.code == 2 && unregistered.lines.count == 1 && unregistered.lines[0].contains("is not registered in this tool"))
        let log = try wfctl(["log", dir.child("store"), "other"])
        #expect(log.code == 0 && log.lines.contains { $0.contains("counter.add@1") && $0.contains("{\"amount\":") })
        let usage = try wfctl(["state"])
        #expect(usage.code == 2)
    }

    @Test("signals lists records, versions (with the trace context of one posted with a tracer), consumers and pending deliveries")
    func signals() throws {
        let dir = TemporaryDirectory("cli-signals")
        let signal = SignalID()
        do {
            let center = try SignalCenter.open(path: dir.path, processIdentity: "test")
            try center.register(signal, owner: "account-7", scope: .durable)
            try center.post(signal, value: "halfway", terminatesConsumersAfterDelivery: false)
            try center.stop()
            let traced = try SignalCenter.open(path: dir.path, processIdentity: "traced", configuration: SignalConfiguration(tracer: InMemoryTracer()))
            try traced.post(signal, value: "done")
            try traced.stop()
        }
        let info = try wfctl(["info", dir.path])
        #expect(info.code == 0, "\(info.lines)")
        #expect(info.lines.contains { $0.hasPrefix("signals") && $0.hasSuffix(" 1") })
        #expect(info.lines.contains { $0.hasPrefix("consumers") && $0.hasSuffix(" 1") })
        let list = try wfctl(["signals", dir.path])
        #expect(list.code == 0)
        #expect(list.lines.count == 2 && list.lines[1].hasPrefix(signal.description) && list.lines[1].contains("  2  "))
        let detail = try wfctl(["signals", dir.path, signal.description])
        #expect(detail.lines.contains { $0.hasPrefix("1 ") && $0.contains("\"halfway\"") })
        #expect(detail.lines.contains { $0.contains("account-7") && $0.hasSuffix("1,2") })
        let json = try JSONSerialization.jsonObject(with: Data(try wfctl(["signals", dir.path, signal.description, "--json"]).lines.joined().utf8)) as! [String: Any]
        #expect((json["pending"] as? [[String: Any]])?.first?["versions"] as? [Int] == [1, 2])
        let versions = json["versions"] as? [[String: Any]]
        #expect(versions?.first?["traceContext"] == nil)
        #expect(versions?.last?["traceContext"] as? [String: String] == [InMemoryTracer.traceIDKey: "trace-1", InMemoryTracer.spanIDKey: "span-1"])
    }
}
