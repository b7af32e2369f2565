import DurableWorkflow
import Foundation
import Synchronization
import Workflow
import WorkflowPostgres

/// The failover time (issue 60, point 6): a primary with a synchronous standby, both private on
/// loopback (`tools/lib/postgres-pair`, named by `WORKFLOW_BENCH_POSTGRES_PAIR`: tools/bench sets
/// it; skipped without it), the store's URL naming both; ``instances`` instances, each with a
/// client (a thread) sending and awaiting each action, and resuming its instance when a send fails (the commit's
/// connection went with the primary). Each run stops the primary as a crash would and promotes
/// the standby (`postgres-pair failover`), then builds a new standby. Measured per run: the
/// promotion (the script's own time, from the stop), and the time from the stop, and from the
/// promotion, to the first acknowledgement after the promotion of an action sent after the stop.
enum PostgresFailoverScenario {
    static let name = "postgres-failover"
    static let instances = 20

    static var script: String? { ProcessInfo.processInfo.environment["WORKFLOW_BENCH_POSTGRES_PAIR"] }

    struct PairFailed: Error, CustomStringConvertible {
        let command: String
        let output: String
        var description: String { "postgres-pair \(command) failed: \(output.suffix(500))" }
    }

    /// Runs `postgres-pair dir command`; returns its last line. Not with `Process`: it learns of
    /// a child's exit when a descriptor the child inherited is closed by all who hold it, and the
    /// servers the script starts keep it open, so `waitUntilExit` never returned. `system` waits
    /// for the script itself; its output goes to a file.
    @discardableResult
    static func pair(_ script: String, _ dir: String, _ command: String) throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("wfbench-pair-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: log) }
        func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let status = system([script, dir, command].map(quoted).joined(separator: " ") + " >\(quoted(log.path)) 2>&1 </dev/null")
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard status == 0 else { throw PairFailed(command: command, output: text) }
        return text.split(separator: "\n").last.map(String.init) ?? ""
    }

    /// The clients' load: each acknowledged action's send and acknowledgement times, and whether
    /// the clients are to stop.
    final class Load: Sendable {
        private let times = Mutex<[(sent: ContinuousClock.Instant, acknowledged: ContinuousClock.Instant)]>([])
        private let stopped = Atomic<Bool>(false)

        var isStopping: Bool { stopped.load(ordering: .relaxed) }
        func stop() { stopped.store(true, ordering: .relaxed) }

        func record(sent: ContinuousClock.Instant) {
            let now = ContinuousClock.now
            times.withLock { $0.append((sent, now)) }
        }

        /// The first acknowledgement after `acknowledgedAfter` of a send that began after `sentAfter`.
        func first(sentAfter: ContinuousClock.Instant, acknowledgedAfter: ContinuousClock.Instant) -> ContinuousClock.Instant? {
            times.withLock { times in
                times.filter { $0.sent > sentAfter && $0.acknowledged > acknowledgedAfter }.map(\.acknowledged).min()
            }
        }
    }

    static func run(runs: Int) throws -> [Measurement] {
        guard let script else {
            FileHandle.standardError.write(Data("wf-bench: postgres failover skipped: set WORKFLOW_BENCH_POSTGRES_PAIR to tools/lib/postgres-pair (tools/bench does)\n".utf8))
            return []
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("wfbench-pair-\(UUID().uuidString)").path
        defer {
            _ = try? pair(script, dir, "stop")
            try? FileManager.default.removeItem(atPath: dir)
        }
        let ports = try pair(script, dir, "init").split(separator: " ")
        guard ports.count == 2, let configuration = PostgresConfiguration(
            url: "postgres://postgres@127.0.0.1:\(ports[0]),127.0.0.1:\(ports[1])/postgres?schema=wfbench_failover")
        else { throw PairFailed(command: "init", output: "printed \(ports)") }
        let storage = try PostgresStorage.open(configuration)
        defer { storage.close() }
        let store = WorkflowStore(backend: storage)
        let counters = benchConfiguration(.grouped)
        let ids = (0..<instances).map { "f\($0)" }
        for id in ids { try store.start(CodableCounter(), id: id, configuration: counters).stop() }
        let load = Load()
        // A thread per client, not a task: `resume` blocks its caller until the store answers, and
        // 20 clients blocked on the two threads of the cooperative pool would starve the commits
        // they wait for.
        let clients = ids.map { id in
            let finished = DispatchSemaphore(value: 0)
            let thread = Thread {
                while !load.isStopping {
                    // Resumed again whenever a send fails: its commit went with the primary.
                    guard let host = try? store.resume(id: id, as: CodableCounter.self, configuration: counters) else {
                        Thread.sleep(forTimeInterval: 0.01)
                        continue
                    }
                    while !load.isStopping {
                        let sent = ContinuousClock.now
                        guard waitFor({ await host.rendering.sink.sendAndWait(.init(amount: 1)) }) else { break }
                        load.record(sent: sent)
                    }
                    waitFor { await host.stopAndWait() }
                }
                finished.signal()
            }
            thread.start()
            return finished
        }
        defer {
            load.stop()
            for finished in clients { finished.wait() }
        }
        var promotions: [Double] = [], fromStop: [Double] = [], fromPromotion: [Double] = []
        for _ in 0..<runs {
            Thread.sleep(forTimeInterval: 1.5)
            let stopped = ContinuousClock.now
            try pair(script, dir, "failover")
            let promoted = ContinuousClock.now
            let deadline = promoted + .seconds(30)
            // Sent after the stop began and acknowledged after the promotion: committed on the new
            // primary (the old one was down before the promotion began).
            var first = load.first(sentAfter: stopped, acknowledgedAfter: promoted)
            while first == nil, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.005)
                first = load.first(sentAfter: stopped, acknowledgedAfter: promoted)
            }
            guard let first else { throw PairFailed(command: "failover", output: "nothing was acknowledged within 30 s of the promotion") }
            promotions.append(seconds(promoted - stopped))
            fromStop.append(seconds(first - stopped))
            fromPromotion.append(seconds(first - promoted))
            try pair(script, dir, "rebuild")
        }
        let detail = "\(instances) instances awaiting durability (grouped) on a primary with a synchronous standby, the primary stopped with pg_ctl stop -m immediate and the standby promoted"
        let promotion = Measurement(name, "failover-promotion", metric: "s", samples: promotions,
                                    detail: "the stop and the promotion (postgres-pair failover): " + detail)
        // Against the promotion, run by run: the engine's share of the outage is what it adds.
        let firstCommit = Measurement(name, "failover-first-commit", metric: "s", samples: fromStop,
                                      detail: "from the stop to the first acknowledgement after the promotion of an action sent after the stop, against the stop and the promotion in the same run: " + detail)
            .relative(to: promotion, pairing: fromStop.map { 1 / $0 }, with: promotions.map { 1 / $0 })
        return [
            promotion, firstCommit,
            Measurement(name, "failover-first-commit-after-promotion", metric: "s", samples: fromPromotion,
                        detail: "from the promotion to that acknowledgement (issue 60's goal: within 2 s): " + detail),
        ]
    }

    /// Runs `body` on the cooperative pool and blocks this (client) thread until it returns.
    @discardableResult
    static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let answer = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            answer.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0! }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
