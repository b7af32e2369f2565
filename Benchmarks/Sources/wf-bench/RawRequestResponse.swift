import Foundation
import LMDB
import PostgresNIO
import Synchronization
import WorkflowPostgres

/// The request/response shape with no engine in it: N client tasks each loop on awaiting the
/// durability of one 100-byte record; one committer thread takes every record waiting, writes them
/// in one synced LMDB transaction and resumes their clients. It is what any engine that
/// acknowledges each action after its synced commit must at least do, so it is the ceiling of the
/// service scenario's request/response cases measured with the same clients, tasks and disk.
///
/// On LMDB its committer gathers its rounds by the engine's rule for serial commits (see
/// `gather(after:)`), which lets more records share a commit: without it, the ceiling would
/// understate what the shape allows (docs/PERFORMANCE.md, the service shapes on LMDB).
final class RawGroupCommitter: Sendable {
    /// Writes one round: the clients whose records it holds. Made on its committer's thread.
    typealias RoundWriter = ([Int]) throws -> Void

    private struct Waiting {
        var clients: [(client: Int, resume: CheckedContinuation<Void, Never>)] = []
        var idle = 0
        var stopping = false
    }

    private let waiting = Mutex(Waiting())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let committers: Int
    private let gathers: Bool

    /// Starts a committer thread for each of `writers` (each made on its own thread, so it may
    /// hold a connection or a counter of its own); each takes every record waiting, after
    /// gathering (when `gathers`) as the engine's committer does where commits are serial.
    init(gathers: Bool = false, writers: [@Sendable () throws -> RoundWriter]) {
        committers = writers.count
        self.gathers = gathers
        for makeWriter in writers {
            Thread { [self] in commitLoop(makeWriter) }.start()
        }
    }

    /// Returns once `client`'s next record is written and synced.
    func commit(client: Int) async {
        await withCheckedContinuation { resume in
            let wakeCommitter = waiting.withLock { state in
                state.clients.append((client, resume))
                guard state.idle > 0 else { return false }
                state.idle -= 1
                return true
            }
            if wakeCommitter { wake.signal() }
        }
    }

    /// Stops the committers once no client waits.
    func stop() {
        let idle = waiting.withLock { state in
            state.stopping = true
            defer { state.idle = 0 }
            return state.idle
        }
        for _ in 0..<idle { wake.signal() }
        for _ in 0..<committers { stopped.wait() }
    }

    private func commitLoop(_ makeWriter: () throws -> RoundWriter) {
        let write: RoundWriter
        do { write = try makeWriter() } catch { fatalError("raw request/response: \(error)") }
        var last = 0
        while true {
            if gathers { gather(after: last) }
            let (round, stopping) = waiting.withLock { state in
                let round = state.clients
                state.clients.removeAll(keepingCapacity: true)
                if round.isEmpty, !state.stopping { state.idle += 1 }
                return (round, state.stopping)
            }
            if round.isEmpty {
                if stopping { break }
                wake.wait()
                continue
            }
            do { try write(round.map(\.client)) } catch { fatalError("raw request/response commit failed: \(String(reflecting: error))") }
            for (_, resume) in round { resume.resume() }
            last = round.count
        }
        stopped.signal()
    }

    /// After a round of `last` records: takes the next at once when half of them wait again, else
    /// waits (looking every 30 µs) until 90% do, two looks in a row found no more, or 500 µs.
    private func gather(after last: Int) {
        guard last > 1 else { return }
        let deadline = ContinuousClock.now + .microseconds(500)
        var seen = waiting.withLock { $0.clients.count }
        if seen >= last / 2 { return }
        var quiet = 0
        while seen < last * 9 / 10, ContinuousClock.now < deadline, quiet < 2 {
            usleep(30)
            let now = waiting.withLock { $0.clients.count }
            quiet = now > seen ? 0 : quiet + 1
            seen = now
        }
    }

    /// Clients looping on ``commit(client:)`` for `window` seconds: records made durable per second.
    func recordsPerSecond(clients count: Int, window: Double) -> Double {
        ServiceScenario.clientsLooping(count, window: window) { client in
            await self.commit(client: client)
            return true
        }.perSecond
    }
}

/// What ``RawGroupCommitter/pairedWithEngine(_:clients:window:runs:shapeMetric:shapeDetail:engineDetail:ceiling:second:clocks:engine:)``
/// measured: the shape, the engine (against the ceiling when one was paired), the engine against
/// the shape, and the ceiling.
struct PairedRuns {
    let shape: Measurement
    let engine: Measurement
    let paired: Measurement
    let ceiling: Measurement?
    /// The second shape's figure (against the ceiling) and the engine's against it, when one was given.
    var second: (shape: Measurement, paired: Measurement)?
    /// The CPU each shape spent per record and the engine per action, for each clock given.
    var cpu: [Measurement] = []
}

extension RawGroupCommitter {
    /// `runs` runs of the ceiling (when given: batched raw commits of the same records), the
    /// shape's (`count` clients of this committer) and `engine`'s, one after the other, so that
    /// the machine's drift weighs on every side of a ratio: the ceiling's figure, the shape's, the
    /// engine's against the ceiling and the engine's against the shape (each the median of the
    /// runs' ratios), named `raw-request-response-N`, `request-response-grouped-N` and
    /// `request-response-grouped-N-of-shape` in `scenario`. A `second` shape (another committer of
    /// the same clients) runs between the shape and the engine: `raw-request-response-NAME-N`
    /// against the ceiling and `request-response-grouped-N-of-NAME-shape`. Each of `clocks` times
    /// the CPU of every run of a shape and of the engine: per record and per action, in µs
    /// (`raw-request-response-N-CLOCK-cpu`, `raw-request-response-NAME-N-CLOCK-cpu`,
    /// `request-response-grouped-N-CLOCK-cpu`, each the median of the runs).
    func pairedWithEngine(
        _ scenario: String, clients count: Int, window: Double, runs: Int, shapeMetric: String, shapeDetail: String,
        engineDetail: String, ceiling: (name: String, detail: String, run: () throws -> Double)? = nil,
        second: (name: String, detail: String, committer: RawGroupCommitter)? = nil, clocks: [CPUClock] = [.process],
        engine: () -> Double
    ) throws -> PairedRuns {
        var ceilingSamples: [Double] = [], shapeSamples: [Double] = [], secondSamples: [Double] = [], engineSamples: [Double] = []
        // Per clock, the CPU per unit of each run: of the shape, the second shape and the engine.
        var shapeCPU = clocks.map { _ in [Double]() }, secondCPU = shapeCPU, engineCPU = shapeCPU
        func timed(_ samples: inout [Double], _ cpu: inout [[Double]], _ body: () -> Double) {
            let (rate, microseconds) = CPUClock.perUnit(clocks, body)
            samples.append(rate)
            for index in clocks.indices { cpu[index].append(microseconds[index]) }
        }
        for _ in 0..<runs {
            if let ceiling { ceilingSamples.append(try ceiling.run()) }
            timed(&shapeSamples, &shapeCPU) { recordsPerSecond(clients: count, window: window) }
            if let second { timed(&secondSamples, &secondCPU) { second.committer.recordsPerSecond(clients: count, window: window) } }
            timed(&engineSamples, &engineCPU, engine)
        }
        let measuredCeiling = ceiling.map { ceiling in
            Measurement(scenario, ceiling.name, metric: shapeMetric, samples: ceilingSamples, detail: ceiling.detail)
        }
        var shape = Measurement(scenario, "raw-request-response-\(count)", metric: shapeMetric, samples: shapeSamples, detail: shapeDetail)
        var engine = Measurement(scenario, "request-response-grouped-\(count)", metric: "actions_per_s", samples: engineSamples, detail: engineDetail)
        if let measuredCeiling {
            shape = shape.relative(to: measuredCeiling, pairing: shapeSamples, with: ceilingSamples)
            engine = engine.relative(to: measuredCeiling, pairing: engineSamples, with: ceilingSamples)
        }
        let paired = Measurement(
            scenario, "request-response-grouped-\(count)-of-shape", metric: "actions_per_s", samples: engineSamples,
            detail: "the same, against raw request/response measured right before each run"
        ).relative(to: shape, pairing: engineSamples, with: shapeSamples)
        var runs = PairedRuns(shape: shape, engine: engine, paired: paired, ceiling: measuredCeiling)
        if let second {
            var secondShape = Measurement(scenario, "raw-request-response-\(second.name)-\(count)", metric: shapeMetric, samples: secondSamples, detail: second.detail)
            if let measuredCeiling { secondShape = secondShape.relative(to: measuredCeiling, pairing: secondSamples, with: ceilingSamples) }
            let secondPaired = Measurement(
                scenario, "request-response-grouped-\(count)-of-\(second.name)-shape", metric: "actions_per_s", samples: engineSamples,
                detail: "the same, against the \(second.name) raw request/response measured right before each run"
            ).relative(to: secondShape, pairing: engineSamples, with: secondSamples)
            runs.second = (secondShape, secondPaired)
        }
        for (index, clock) in clocks.enumerated() {
            let what = "the \(clock.name)'s CPU (user and system), in µs"
            runs.cpu.append(Measurement(scenario, "raw-request-response-\(count)-\(clock.name)-cpu", metric: "cpu_us_per_record",
                                        samples: shapeCPU[index], detail: "\(what) per record of raw-request-response-\(count)"))
            if let second {
                runs.cpu.append(Measurement(
                    scenario, "raw-request-response-\(second.name)-\(count)-\(clock.name)-cpu", metric: "cpu_us_per_record",
                    samples: secondCPU[index], detail: "\(what) per record of raw-request-response-\(second.name)-\(count)"))
            }
            runs.cpu.append(Measurement(scenario, "request-response-grouped-\(count)-\(clock.name)-cpu", metric: "cpu_us_per_action",
                                        samples: engineCPU[index], detail: "\(what) per action of request-response-grouped-\(count)"))
        }
        return runs
    }
}

/// ``RawGroupCommitter`` on raw LMDB in a store of its own, with one committer (LMDB writes one
/// transaction at a time), each record appended after the previous one as the engine's journal
/// appends a commit of many instances.
final class RawLMDBRequestResponse {
    let committer: RawGroupCommitter
    private let directory: String

    init(clients: Int) throws {
        directory = try temporaryStore("raw-rr-\(clients)")
        let environment = try Environment.open(path: directory, configuration: .init(durability: .strict))
        let database: Database<UInt64, [UInt8]> = try environment.database(named: "log")
        committer = RawGroupCommitter(gathers: true, writers: [{
            let value = [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize)
            var next: UInt64 = 1
            return { clients in
                try environment.write { txn in
                    for _ in clients {
                        try txn.append(value, forKey: next, in: database)
                        next += 1
                    }
                }
            }
        }])
    }

    deinit {
        committer.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension PostgresScenario {
    /// ``RawGroupCommitter`` on raw PostgreSQL: as many connections as the engine has commits in
    /// flight (``PostgresConfiguration/concurrentCommits``), each `CALL`ing the raw table's
    /// procedure with every row waiting when it is free.
    static func rawRequestResponse(clients count: Int, server: PostgresConfiguration, table: RawTable) throws -> RawGroupCommitter {
        let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
        let schema = table.schema
        return RawGroupCommitter(writers: (0..<server.concurrentCommits).map { writer in {
            let table = try RawTable(server: server, schema: schema)
            // Keys above those of the other cases; each committer's sequences apart from the others'.
            var sequence = Int64(writer + 1) << 40
            return { clients in
                sequence += 1
                let keys = clients.map { Int64(2) << 48 | Int64($0) }
                _ = try table.connection.query(
                    "CALL \(unescaped: schema).raw_insert(\(keys), \(Array(repeating: sequence, count: clients.count)), \(Array(repeating: record, count: clients.count)))",
                    logger: table.logger
                ).wait()
            }
        } })
    }

    /// ``rawRequestResponse(clients:server:table:)`` with the engine's fence (store format 16):
    /// each `CALL` holds its owner's advisory lock shared and inserts only the rows whose owner
    /// row (one per client) names that owner and whose key's row of the sequence before is in
    /// the log, both read in the insert's own statement, as the engine's `wf_commit` does for its
    /// instances, and nothing else. The least a commit with that fence costs the server.
    static func fencedRequestResponse(clients count: Int, server: PostgresConfiguration, table: RawTable) throws -> RawGroupCommitter {
        let record = ByteBuffer(bytes: [UInt8](repeating: 0xAB, count: RawLMDBScenario.recordSize))
        let schema = table.schema
        let keys = (0..<count).map { Int64(3) << 48 | Int64($0) }
        try table.addFences(keys: keys, owner: 1)
        // Each client's rows are numbered 1, 2, ... (dense, as an instance's log: the fence looks
        // up the one before); a client is in one CALL at a time.
        let sequences = Mutex([Int64](repeating: 0, count: count))
        return RawGroupCommitter(writers: (0..<server.concurrentCommits).map { _ in {
            let table = try RawTable(server: server, schema: schema)
            return { clients in
                let next = sequences.withLock { sequences in
                    clients.map { client in
                        sequences[client] += 1
                        return sequences[client]
                    }
                }
                _ = try table.connection.query(
                    """
                    CALL \(unescaped: schema).raw_fenced(\(clients.map { keys[$0] }), \(next), \
                    \(Array(repeating: record, count: clients.count)), \(Array(repeating: Int64(1), count: clients.count)))
                    """,
                    logger: table.logger
                ).wait()
            }
        } })
    }
}
