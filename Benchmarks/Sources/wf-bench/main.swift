// wf-bench: measures the engine against the raw LMDB ceiling and its peers, in one run.
//
//   swift run -c release --package-path Benchmarks wf-bench [SCENARIO ...] [--json FILE] [--runs N] [--quick] [--check FILE]
//
// --check FILE compares the run's ratios with a thresholds file (Benchmarks/Thresholds) and exits 1
// when one falls below its floor; without scenarios it runs those the file names.
import Foundation

// The child processes that scenarios start (this executable, with a mode flag first).
let childModes: [String: ([String]) throws -> Void] = [
    "--signal-poster": SignalsScenario.runPoster,
    "--service-child": ServiceScenario.runChild,
    "--postgres-host-child": PostgresScenario.runHostChild,
    "--postgres-raw-child": PostgresScenario.runRawChild,
]
if CommandLine.arguments.count > 1, let child = childModes[CommandLine.arguments[1]] {
    try child(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}

/// Ceilings measured so far in this run, by case name (raw-lmdb runs first when needed).
nonisolated(unsafe) var ceilings: [String: Measurement] = [:]

let scenarios: [(name: String, run: ((runs: Int, scale: Double)) throws -> [Measurement])?] = [
    (RawLMDBScenario.name, { try RawLMDBScenario.run(runs: $0.runs, scale: $0.scale) }),
    (RuntimeScenario.name, { RuntimeScenario.run(runs: $0.runs, scale: $0.scale) }),
    (DurableScenario.name, { try DurableScenario.run(runs: $0.runs, scale: $0.scale, ceilings: ceilings) }),
    (ReplayScenario.name, { try ReplayScenario.run(runs: $0.runs, scale: $0.scale, ceilings: ceilings) }),
    (InstancesScenario.name, { try InstancesScenario.run(runs: $0.runs, scale: $0.scale) }),
    (RecoveryScenario.name, { try RecoveryScenario.run(runs: $0.runs, scale: $0.scale) }),
    (SignalsScenario.name, { try SignalsScenario.run(runs: $0.runs, scale: $0.scale) }),
    (FeedbackScenario.name, { try FeedbackScenario.run(runs: $0.runs, scale: $0.scale, runtime: ceilings["one-node"]) }),
    (ServiceScenario.name, { try ServiceScenario.run(runs: $0.runs, scale: $0.scale) }),
    (SQLiteScenario.name, { try SQLiteScenario.run(runs: $0.runs, scale: $0.scale, ceilings: ceilings) }),
    (PostgresScenario.name, { try PostgresScenario.run(runs: $0.runs, scale: $0.scale) }),
    (PostgresFailoverScenario.name, { try PostgresFailoverScenario.run(runs: $0.runs) }),
]
let plannedScenarios: [String] = []
let needCeilings: Set<String> = ["durable", "replay", "sqlite"]

var selected: [String] = []
var jsonPath: String?
var checkPath: String?
var runs = 5
var scale = 1.0
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json": jsonPath = arguments.popFirst()
    case "--runs": runs = Int(arguments.popFirst() ?? "") ?? runs
    case "--quick": scale = 0.1; runs = 3
    case "--check": checkPath = arguments.popFirst()
    case "--help", "-h":
        print("usage: wf-bench [SCENARIO ...] [--json FILE] [--runs N] [--quick] [--check FILE]")
        print("scenarios: \((scenarios.compactMap { $0?.name } + plannedScenarios).joined(separator: ", "))")
        exit(0)
    default: selected.append(argument)
    }
}
let available = scenarios.compactMap { $0 }
let known = Set(available.map(\.name) + plannedScenarios)
for name in selected where !known.contains(name) {
    FileHandle.standardError.write(Data("wf-bench: unknown scenario '\(name)'\n".utf8))
    exit(2)
}
var thresholds: Thresholds?
if let checkPath {
    do {
        thresholds = try Thresholds.load(checkPath)
    } catch {
        FileHandle.standardError.write(Data("wf-bench: \(error)\n".utf8))
        exit(2)
    }
    for name in thresholds!.scenarios where !known.contains(name) {
        FileHandle.standardError.write(Data("wf-bench: \(checkPath) names an unknown scenario '\(name)'\n".utf8))
        exit(2)
    }
    if selected.isEmpty { selected = thresholds!.scenarios }
}
var wanted = selected.isEmpty ? available.map(\.name) + plannedScenarios : selected
// Ratios need the ceiling measured in the same run.
if !wanted.contains(RawLMDBScenario.name), wanted.contains(where: needCeilings.contains) {
    wanted.insert(RawLMDBScenario.name, at: 0)
}

let machine = Report.machine()
print("wf-bench — \(machine["date"] ?? ""), \(machine["cores"] ?? "?") cores, \(machine["memory_gib"] ?? "?") GiB, \(machine["filesystem"] ?? "unknown filesystem")")
print("median of \(runs) runs each\n")
var all: [Measurement] = []
var ran: Set<String> = []
for name in wanted {
    guard let scenario = available.first(where: { $0.name == name }) else {
        print("== \(name)\nnot there yet: the engine part it measures has not landed\n")
        continue
    }
    // Dirty pages the previous scenarios left (stores of a million entries) are written out
    // first: written back by the kernel during the next scenario, they took CPU and I/O from it
    // (replay measured 1.0M entries/s after the earlier scenarios and 1.8M on its own).
    sync()
    do {
        let results = try scenario.run((runs, scale))
        if name == RawLMDBScenario.name || name == RuntimeScenario.name { for result in results { ceilings[result.case] = result } }
        all += results
        ran.insert(name)
        print(Report.table(name, results))
    } catch {
        print("== \(name)\nfailed: \(String(reflecting: error))\n")
    }
}

if let jsonPath {
    struct Output: Encodable {
        let machine: [String: String]
        let results: [Measurement]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(Output(machine: machine, results: all)).write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}

if let thresholds, let checkPath {
    let rows = ThresholdCheck.check(thresholds, against: all, ran: ran)
    print(ThresholdCheck.report(rows, file: checkPath))
    if !ThresholdCheck.passes(rows) { exit(1) }
}
