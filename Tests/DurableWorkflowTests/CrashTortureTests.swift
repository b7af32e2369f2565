import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

@Suite("Crash torture: real processes killed with SIGKILL while applying actions")
struct CrashTortureTests {
    @Test(
        "after 30 kills at random moments, nothing acknowledged is lost and nothing is applied twice",
        arguments: ["strict", "grouped", "processCrashSafe"]
    )
    func killRepeatedly(mode: String) throws {
        let dir = TemporaryDirectory("torture-\(mode)")
        var acknowledged = 0
        var kills = 0
        let rounds = TestLoad.scaled(30)
        for round in 0..<rounds {
            let child = try ChildProcess(["durable-counter-loop", dir.path, mode], mergeStandardError: true)
            guard let ready = child.readLine(), ready.hasPrefix("ready ") else {
                Issue.record("round \(round): the child did not resume: \(child.readRemainingLines(timeout: .seconds(2)))")
                return
            }
            let fields = ready.split(separator: " ").compactMap { Int($0) }
            // The resumed state holds every acknowledged action, applied exactly once.
            #expect(fields[0] >= acknowledged, "round \(round): resumed with \(fields[0]) applied, \(acknowledged) were acknowledged")
            #expect(fields[1] == fields[0] * (fields[0] + 1) / 2, "round \(round): count \(fields[1]) is not 1+...+\(fields[0])")
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 5...120))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) {
                if line.hasPrefix("ack "), let value = Int(line.dropFirst(4)) { acknowledged = value }
            }
            child.kill()
            for line in child.readRemainingLines(timeout: .seconds(5)) where line.hasPrefix("ack ") {
                acknowledged = Int(line.dropFirst(4)) ?? acknowledged
            }
            #expect(try child.waitForExit() == 128 + SIGKILL)
            kills += 1
        }
        #expect(kills == rounds)
        #expect(acknowledged > 0)

        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(actions: DurableCounter.actions)
        let host = try store.resume(id: "torture", as: DurableCounter.self, configuration: configuration)
        let state = host.rendering.state
        #expect(state.applied >= acknowledged)
        #expect(state.count == state.applied * (state.applied + 1) / 2)
        #expect(try store.instance(id: "torture")?.lastSequence == UInt64(state.applied + 1))
        let report = try store.verify(id: "torture", as: DurableCounter.self, configuration: configuration)
        #expect(report.isConsistent, "\(String(describing: report.problem))")
    }

    @Test(
        "8 instances sharing the store's commits (through the journal, checkpointed every 200 entries), killed 10 times at random moments: nothing acknowledged to any of them is lost or applied twice",
        arguments: ["strict", "grouped"]
    )
    func killWhileInstancesShareCommits(mode: String) throws {
        let dir = TemporaryDirectory("torture-shared-\(mode)")
        let instances = 8
        var acknowledged = [Int](repeating: 0, count: instances)
        func note(_ line: String) {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "ack", let index = Int(fields[1]), let value = Int(fields[2]) {
                acknowledged[index] = max(acknowledged[index], value)
            }
        }
        let rounds = TestLoad.scaled(10)
        for round in 0..<rounds {
            let child = try ChildProcess(["durable-counters-loop", dir.path, mode, "\(instances)", "200"], mergeStandardError: true)
            for index in 0..<instances {
                guard let line = child.readLine(), line.hasPrefix("state \(index) ") else {
                    Issue.record("round \(round): the child did not resume t\(index): \(child.readRemainingLines(timeout: .seconds(2)))")
                    return
                }
                let fields = line.split(separator: " ").compactMap { Int($0) }
                // The resumed state holds every acknowledged action, applied exactly once.
                #expect(fields[1] >= acknowledged[index], "round \(round): t\(index) resumed with \(fields[1]) applied, \(acknowledged[index]) acknowledged")
                #expect(fields[2] == fields[1] * (fields[1] + 1) / 2, "round \(round): t\(index) count \(fields[2]) is not 1+...+\(fields[1])")
            }
            #expect(child.readLine() == "ready")
            // The kill lands at a random moment once every instance is under way (a slow machine,
            // or a sanitizer's, may take longer than the shortest window to commit each one's first).
            let started = acknowledged
            var under = [Bool](repeating: false, count: instances)
            let startDeadline = ContinuousClock.now + .seconds(30)
            while under.contains(false), ContinuousClock.now < startDeadline, let line = child.readLine(timeout: .seconds(5)) {
                note(line)
                for index in 0..<instances where acknowledged[index] > started[index] { under[index] = true }
            }
            #expect(!under.contains(false), "round \(round): not every instance acknowledged an action within 30 s: \(acknowledged)")
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 20...200))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) { note(line) }
            child.kill()
            for line in child.readRemainingLines(timeout: .seconds(5)) { note(line) }
            #expect(try child.waitForExit() == 128 + SIGKILL)
        }
        #expect(acknowledged.allSatisfy { $0 > 0 }, "every instance had acknowledged actions: \(acknowledged)")

        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(actions: DurableCounter.actions)
        for index in 0..<instances {
            let host = try store.resume(id: "t\(index)", as: DurableCounter.self, configuration: configuration)
            let state = host.rendering.state
            #expect(state.applied >= acknowledged[index])
            #expect(state.count == state.applied * (state.applied + 1) / 2)
            #expect(try store.entries(of: "t\(index)").map(\.sequence) == Array(1...UInt64(state.applied + 1)))
            host.stop()
            let report = try store.verify(id: "t\(index)", as: DurableCounter.self, configuration: configuration)
            #expect(report.isConsistent, "\(String(describing: report.problem))")
        }
    }

    @Test("two processes running 6 instances each on one store at once, their commits going through the store's one journal (checkpointed every 100 entries by either), then killed: every instance of either resumes with everything acknowledged to it applied once, and its log is dense")
    func twoProcessesShareTheJournal() throws {
        let dir = TemporaryDirectory("torture-two-processes")
        let instances = 6, prefixes = ["a", "b"]
        var acknowledged = [[Int]](repeating: [Int](repeating: 0, count: instances), count: prefixes.count)
        func note(_ line: String, of child: Int) {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "ack", let index = Int(fields[1]), let value = Int(fields[2]) {
                acknowledged[child][index] = max(acknowledged[child][index], value)
            }
        }
        // One after the other: the second opens a store the first has made.
        var children: [ChildProcess] = []
        for prefix in prefixes {
            let child = try ChildProcess(["durable-counters-loop", dir.path, "grouped", "\(instances)", "100", prefix], mergeStandardError: true)
            children.append(child)
            for index in 0..<instances {
                let line = child.readLine()
                #expect(line == "state \(index) 0 0", "\(prefix)\(index) did not start: \(line ?? "nothing")")
            }
            #expect(child.readLine() == "ready")
        }
        // Both commit at once until every instance of either has acknowledged a few hundred actions
        // (a few checkpoints of each process's and the other's entries), or 30 s pass.
        let deadline = ContinuousClock.now + .seconds(30)
        while acknowledged.joined().contains(where: { $0 < 300 }), ContinuousClock.now < deadline {
            for (index, child) in children.enumerated() {
                for _ in 0..<200 {
                    guard let line = child.readLine(timeout: .milliseconds(20)) else { break }
                    note(line, of: index)
                }
            }
        }
        for (index, child) in children.enumerated() {
            child.kill()
            for line in child.readRemainingLines(timeout: .seconds(5)) { note(line, of: index) }
            #expect(try child.waitForExit() == 128 + SIGKILL)
        }
        #expect(acknowledged.joined().allSatisfy { $0 >= 300 }, "every instance acknowledged 300 actions: \(acknowledged)")

        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(actions: DurableCounter.actions)
        for (child, prefix) in prefixes.enumerated() {
            for index in 0..<instances {
                let id = "\(prefix)\(index)"
                let host = try store.resume(id: id, as: DurableCounter.self, configuration: configuration)
                let state = host.rendering.state
                #expect(state.applied >= acknowledged[child][index], "\(id)")
                #expect(state.count == state.applied * (state.applied + 1) / 2, "\(id)")
                #expect(try store.entries(of: id).map(\.sequence) == Array(1...UInt64(state.applied + 1)), "\(id)")
                #expect(try store.instance(id: id)?.lastSequence == UInt64(state.applied + 1), "\(id)")
                host.stop()
                let report = try store.verify(id: id, as: DurableCounter.self, configuration: configuration)
                #expect(report.isConsistent, "\(id): \(String(describing: report.problem))")
            }
        }
    }
}
