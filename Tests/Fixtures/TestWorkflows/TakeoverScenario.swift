#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DurableWorkflow
import Foundation
import TestSupport
import Workflow

/// The service's takeover loop from outside (issue 59, point 5): three host processes run a
/// store's tickers (`ticker-service`), one of them is killed with SIGKILL and replaced, again and
/// again; after each kill the others take the dead host's instances over by themselves (no
/// caller polls for them), and every instance ticks on. Then every log replays as it was written.
public struct TakeoverScenario {
    /// The children's store (a directory, or a PostgreSQL URL).
    public var location: String
    public var instances: Int
    public var hosts: Int
    public var kills: Int
    /// The children's lease (PostgreSQL).
    public var leaseMilliseconds: Int
    public var seed: UInt64

    public init(location: String, instances: Int, hosts: Int = 3, kills: Int = 20, leaseMilliseconds: Int = 1_000, seed: UInt64 = 59) {
        self.location = location
        self.instances = instances
        self.hosts = hosts
        self.kills = kills
        self.leaseMilliseconds = leaseMilliseconds
        self.seed = seed
    }

    public struct Outcome: Sendable {
        /// After each kill, how long until every instance was held by a live host and ticking again.
        public var recoveries: [Duration] = []
        public var problems: [String] = []
    }

    public func run(store: WorkflowStore) async throws -> Outcome {
        var outcome = Outcome()
        let configuration = DurableConfiguration(mode: .grouped, actions: Ticker.actions, snapshotEvery: 20)
        let ids = (0..<instances).map { "tick-\($0)" }
        for id in ids {
            let host = try store.start(Ticker(), id: id, configuration: configuration)
            await host.stopAndWait()
        }
        var generator = SeededGenerator(state: seed)
        var machine = 0
        func spawn() throws -> ChildProcess {
            machine += 1
            let child = try ChildProcess(["ticker-service", location, "machine-\(machine)", "\(leaseMilliseconds)"], mergeStandardError: true)
            guard child.readLine(until: { $0 == "ready" || $0.hasPrefix("error") }, timeout: .seconds(60)) == "ready" else {
                throw ScenarioFailure(description: "a ticker service did not start: \(child.diagnosis)")
            }
            return child
        }
        var children = try (0..<hosts).map { _ in try spawn() }
        defer { for child in children { child.kill() } }
        let limit = Duration.milliseconds(leaseMilliseconds) + .seconds(10)
        if let problem = try await settle(ids, in: store, since: [:], within: limit).problem {
            outcome.problems.append("at the start: \(problem)")
            return outcome
        }
        for round in 1...kills {
            let victim = Int.random(in: 0..<children.count, using: &generator)
            children[victim].kill()
            _ = try? children[victim].waitForExit()
            let killed = ContinuousClock.now
            // Read once the host is dead: its instances tick again only once taken over.
            let before = try Dictionary(uniqueKeysWithValues: ids.map { ($0, try store.instance(id: $0)?.lastSequence ?? 0) })
            children[victim] = try spawn()
            let settled = try await settle(ids, in: store, since: before, within: limit)
            if let problem = settled.problem {
                outcome.problems.append("kill \(round): \(problem)")
                break
            }
            outcome.recoveries.append(ContinuousClock.now - killed)
        }
        for child in children { child.kill(SIGTERM) }
        for child in children {
            let lines = child.readRemainingLines(timeout: .seconds(60))
            if (try? child.waitForExit()) != 0 { outcome.problems.append("a host did not stop cleanly: \(lines.suffix(3))") }
        }
        for id in ids {
            let report = try store.verify(id: id, as: Ticker.self, configuration: configuration)
            if let problem = report.problem { outcome.problems.append("\(id) does not replay as written: \(problem)") }
        }
        return outcome
    }

    /// Waits until every instance is held by a live host and has ticked past `since`; what was
    /// wrong at `within` if not.
    private func settle(_ ids: [String], in store: WorkflowStore, since: [String: UInt64], within limit: Duration) async throws
        -> (problem: String?, Void) {
        let deadline = ContinuousClock.now + limit
        var late: [String] = []
        while ContinuousClock.now < deadline {
            late = try ids.filter { id in
                guard let record = try store.instance(id: id), record.status == .running else { return true }
                return try !store.isHeldByLiveHost(id) || record.lastSequence <= (since[id] ?? 0)
            }
            if late.isEmpty { return (nil, ()) }
            try await Task.sleep(for: .milliseconds(50))
        }
        return ("\(late.count) instance(s) not held by a live host, or not ticking, after \(limit): \(late.prefix(5))", ())
    }
}

/// A scenario that could not run as planned.
struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String
}
