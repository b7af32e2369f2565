import DurableWorkflow
import Foundation
import TestSupport

/// The upgrade suite (issue 58): the first build of the order service seeds a store with one
/// instance per stage in a child process, stopped with SIGTERM or killed with SIGKILL; each later
/// build then resumes a copy of that store in a child process of its own. What each build makes of
/// each stage is documented (the DocC article "Evolving workflow code"), and checked here, with
/// the suite's invariant: no instance resumes in a state that neither build's code computes from
/// its log (computed here, in this process, by replaying the copy from its first entry).
public enum UpgradeSuite {
    /// The stages a resume by `build` fails, with the error kind; every other stage resumes.
    public static func failures(of build: any UpgradeBuild.Type) -> [UpgradeStage: String] {
        let everyStage = { (kind: String) in Dictionary(uniqueKeysWithValues: UpgradeStage.allCases.map { ($0, kind) }) }
        switch build.name {
        case BuildDefaultedField.name, BuildRenamedField.name: return everyStage("nonDeterministic")
        case BuildFee.name:
            return [.paid: "nonDeterministic", .paidLong: "nonDeterministic", .charged: "nonDeterministic", .shipped: "nonDeterministic"]
        case BuildWithoutShip.name: return [.shipped: "unknownActionType"]
        case BuildChildKey.name: return [.charged: "nonDeterministic", .shipped: "nonDeterministic"]
        case BuildQuantityUnversioned.name:
            var failures = everyStage("undecodablePayload")
            for stage in [UpgradeStage.openLong, .paidLong, .shippedLong, .paidBeforeSnapshot] { failures[stage] = nil }
            return failures
        default: return [:]
        }
    }

    /// Each instance's state as the first build and as `build` compute it from the log of the
    /// store `store` holds, replayed from its first entry with digest checks off (a build that
    /// cannot replay a log computes nothing for it).
    public static func computedStates(in store: WorkflowStore, by build: any UpgradeBuild.Type) throws -> [String: Set<String>] {
        var states: [String: Set<String>] = [:]
        func add<B: UpgradeBuild>(_ build: B.Type) throws {
            var configuration = UpgradeOrder<B>.configuration()
            configuration.checksRecordedDigests = false
            for instance in try store.instances() {
                guard let tree = try? store.state(of: instance.id, as: UpgradeOrder<B>.self, usingSnapshots: false, configuration: configuration),
                      let state = try? tree.rootState(as: B.State.self) else { continue }
                states[instance.id, default: []].insert(NormalizedOrder(state).json)
            }
        }
        try add(BuildV1.self)
        try add(build)
        return states
    }

    /// What one build's run printed: each instance's state right after its resume, or its failure.
    public struct Run {
        public var resumed: [String: String] = [:]
        public var failed: [String: String] = [:]
        public var after: [String: String] = [:]
        public var new: String?
        public var other: [String] = []
    }

    /// Runs `build` over the store at `location` in a child process and reads what it printed.
    public static func run(_ build: any UpgradeBuild.Type, on location: String) throws -> Run {
        let child = try ChildProcess(["upgrade-run", location, build.name], mergeStandardError: true)
        var run = Run()
        for line in child.readRemainingLines(timeout: .seconds(60)) {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch fields.first {
            case "resumed" where fields.count == 3: run.resumed[fields[1]] = fields[2]
            case "failed" where fields.count == 3: run.failed[fields[1]] = fields[2]
            case "after" where fields.count == 3: run.after[fields[1]] = fields[2]
            case "new" where fields.count == 2: run.new = fields[1]
            case "new" where fields.count == 3: run.new = fields[1] + " " + fields[2]
            case "done": break
            default: run.other.append(line)
            }
        }
        let status = try child.waitForExit()
        if status != 0 { run.other.append("exit \(status)") }
        return run
    }

    /// What is wrong with `run` of `build`, given the states the builds compute (empty: nothing).
    public static func problems(of run: Run, build: any UpgradeBuild.Type, computed: [String: Set<String>], seed: String) -> [String] {
        var problems = run.other.map { "\(build.name) after \(seed): \($0)" }
        let failures = failures(of: build)
        for stage in UpgradeStage.allCases {
            let id = stage.id
            if let kind = failures[stage] {
                if run.failed[id] != kind { problems.append("\(build.name) after \(seed): \(id) should fail with \(kind), got \(run.failed[id] ?? "resumed \(run.resumed[id] ?? "?")")") }
                continue
            }
            guard let state = run.resumed[id] else {
                problems.append("\(build.name) after \(seed): \(id) should resume, got \(run.failed[id] ?? "nothing")")
                continue
            }
            if !(computed[id] ?? []).contains(state) {
                problems.append("\(build.name) after \(seed): \(id) resumed with \(state), which neither build computes from its log: \(computed[id] ?? [])")
            }
        }
        // The new build's work goes on: the outside world now answers.
        if failures[.paid] == nil, build.name != BuildWithoutCharge.name, let paid = run.after[UpgradeStage.paid.id], !paid.contains("\"label\"") {
            problems.append("\(build.name) after \(seed): the paid order did not go on to its label: \(paid)")
        }
        if run.new?.contains("\"status\":\"paid\"") != true && run.new?.contains("\"status\":\"charged\"") != true {
            problems.append("\(build.name) after \(seed): a new instance did not start and pay: \(run.new ?? "nothing")")
        }
        return problems
    }
}
