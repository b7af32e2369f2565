import DurableWorkflow
import Foundation
import TestSupport
import Workflow

/// What a `checkout-loop` child said before it was killed, and what the store must hold after:
/// the crash tests of the instance lifecycle share it, over LMDB and PostgreSQL.
public struct CheckoutCrashLedger {
    /// Checkouts whose start returned.
    public private(set) var started: Set<String> = []
    /// Checkouts whose completion returned, with the items and amount of their receipt.
    public private(set) var finished: [String: (items: Int, paid: Int)] = [:]

    public init() {}

    /// Runs `rounds` `checkout-loop` children on the store at `location` (a directory or a
    /// `postgres://` URL) in `mode`, each killed with SIGKILL at a random moment, taking in what
    /// each said; returns what went wrong with the children themselves (empty: nothing).
    public mutating func runKilledChildren(store location: String, mode: String, rounds: Int) throws -> [String] {
        var problems: [String] = []
        for round in 0..<rounds {
            let child = try ChildProcess(["checkout-loop", location, mode, "r\(round)"], mergeStandardError: true)
            guard child.readLine(timeout: .seconds(30)) == "ready" else {
                return problems + ["round \(round): the child did not start: \(child.readRemainingLines(timeout: .seconds(2)))"]
            }
            var lines: [String] = []
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 50...400))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) { lines.append(line) }
            child.kill()
            lines += child.readRemainingLines(timeout: .seconds(5))
            let status = try child.waitForExit()
            if status != 128 + SIGKILL { problems.append("round \(round): the child exited with \(status): \(lines.suffix(5))") }
            read(lines, round: round)
        }
        if finished.isEmpty { problems.append("no checkout finished before a kill") }
        return problems
    }

    /// Takes in the lines a child of round `round` printed.
    public mutating func read(_ lines: [String], round: Int) {
        for line in lines {
            let fields = line.split(separator: " ")
            if fields.first == "started", fields.count == 2 { started.insert("r\(round)-\(fields[1])") }
            if fields.first == "finished", fields.count == 4, let items = Int(fields[2]), let paid = Int(fields[3]) {
                finished["r\(round)-\(fields[1])"] = (items, paid)
            }
        }
    }

    /// What is wrong with `store` after the kills (empty: nothing): an instance without its first
    /// action, a started checkout missing, a finished one not completed or with another receipt;
    /// then every running one is resumed (`resumeAll`), paid up and must finish. `configuration`
    /// must let `Checkout` run (its actions).
    public func problems(in store: WorkflowStore, configuration: DurableConfiguration) async throws -> [String] {
        var problems: [String] = []
        let instances = try store.instances()
        let ids = Set(instances.map(\.id))
        for id in started.sorted() where !ids.contains(id) { problems.append("\(id) was started but is not in the store") }
        for instance in instances {
            let entries = try store.entries(of: instance.id, through: min(2, instance.lastSequence))
            if entries.map(\.actionTag) != [LogEntry.propsTag, "checkout.open"] {
                problems.append("\(instance.id) begins with \(entries.map(\.actionTag)), not its props and first action")
            }
            if let receipt = finished[instance.id], instance.status != .completed || receipt.paid != 3 || instance.lastSequence != 5 {
                problems.append("\(instance.id) finished before the kill but is \(instance.status) at \(instance.lastSequence)")
            }
            guard instance.status == .completed else { continue }
            let again = try store.resume(id: instance.id, as: Checkout.self, configuration: configuration)
            let outcome = try await again.completion
            if outcome != .receipt(.init(items: Int(instance.id.split(separator: "-").last!) ?? -1, paid: 3)) {
                problems.append("\(instance.id) completed with \(outcome)")
            }
            await again.stopAndWait()
        }
        for result in try store.resumeAll(Checkout.self, configuration: configuration) {
            guard let host = result.host else {
                problems.append("\(result.id) could not be resumed: \(String(describing: result.error))")
                continue
            }
            for _ in 0..<(3 - host.rendering.state.paid) { try await host.rendering.pay.sendAndCommit(.init(amount: 1)) }
            let outcome = try await host.completion
            if outcome != .receipt(.init(items: host.rendering.state.items, paid: 3)) { problems.append("\(result.id) finished with \(outcome)") }
        }
        let running = try store.instances(status: .running)
        if !running.isEmpty { problems.append("still running after resumeAll: \(running.map(\.id))") }
        if try store.instances(status: .completed).count != instances.count { problems.append("not every instance completed") }
        return problems
    }
}
