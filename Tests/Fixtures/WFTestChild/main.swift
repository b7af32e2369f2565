// A helper that tests run as a real child process, so they can kill it with SIGKILL, run two
// processes on one store, or drop privileges. Each command prints progress lines on stdout.
import Dispatch
import Foundation
import DurableWorkflow
import WorkflowLMDB
import LMDB
import TestSupport
import WorkflowFeedback
import WorkflowSignals
import TestWorkflows
import Workflow
import WorkflowLocks
import WorkflowCLI
import WorkflowService
import WorkflowTesting
import ServiceLifecycle
import Logging
#if Postgres
import WorkflowPostgres
#endif

/// The value of `body`, run as a task while this thread waits for it.
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Lock<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let value: Result<T, any Error>
        do { value = .success(try await body()) } catch { value = .failure(error) }
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

func waitForCount(_ body: @escaping @Sendable () async -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    Task.detached { await body(); done.signal() }
    done.wait()
}

/// Runs a service group (which shuts down on SIGTERM) on a task and blocks this thread until it returns.
func runUntilStopped(_ group: ServiceGroup) {
    let stopped = DispatchSemaphore(value: 0)
    Task.detached {
        do { try await group.run() } catch { say("group failed: \(error)") }
        stopped.signal()
    }
    stopped.wait()
}

/// Writes one line to stdout unbuffered, so a parent reading the pipe sees it at once.
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}

func durability(_ name: String) -> EnvironmentConfiguration.Durability {
    switch name {
    case "noSync": return .noSync
    case "noMetaSync": return .noMetaSync
    default: return .strict
    }
}

/// The store at `location`: a directory (LMDB), or a `postgres://` URL naming its schema with
/// `?schema=` (when built with the Postgres trait).
func openStore(_ location: String, checkpointEntries: Int? = nil) throws -> WorkflowStore {
    if location.hasPrefix("postgres://") {
        #if Postgres
        guard let configuration = PostgresConfiguration(url: location) else { fail("not a PostgreSQL URL: \(location)") }
        return try WorkflowStore.open(configuration)
        #else
        fail("built without the Postgres trait: \(location)")
        #endif
    }
    if let checkpointEntries { return try WorkflowStore.open(path: location, checkpointEntries: checkpointEntries) }
    return try WorkflowStore.open(path: location)
}

/// Prints "applied AMOUNT" for each DurableCounter.Add applied, on the host's thread.
struct AppliedPrinter: WorkflowObserver {
    func actionWillApply(_ event: ActionEvent) -> ((_ stateAfter: Any, _ output: Any?) -> Void)? {
        guard let add = event.action as? DurableCounter.Add else { return nil }
        return { _, _ in say("applied \(add.amount)") }
    }
}

/// The ids of the instances a host runs (its driving tasks remove theirs when they end).
/// What a host's listing loop is doing and since when: a watchdog thread reports a step that
/// takes longer than a second ("stalled STEP SECONDS"), so a test can tell a host that stopped
/// taking instances over from one that was never given them.
final class LoopWatch: Sendable {
    private let step = Lock<(name: String, since: ContinuousClock.Instant)>(("starting", .now))

    init() {
        Thread.detachNewThread { [self] in
            var reported = ""
            while true {
                usleep(250_000)
                let (name, since) = step.withLock { $0 }
                let elapsed = ContinuousClock.now - since
                let key = "\(name)@\(since)"
                if elapsed > .seconds(1), reported != key {
                    reported = key
                    say("stalled \(name.replacingOccurrences(of: " ", with: "_")) \(elapsed.components.seconds)")
                }
            }
        }
    }

    func enter(_ name: String) { step.withLock { $0 = (name, .now) } }
}

final class RunningSet: Sendable {
    private let ids = Lock<Set<String>>([])

    /// Adds `id`; whether it was absent.
    func insert(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }
    func remove(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("wf-test-child: \(message)\n".utf8))
    exit(70)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("usage: wf-test-child COMMAND ...") }

// A helper whose test process is gone (this process was handed to another parent) ends: some
// commands loop until killed, and nobody would read them or kill them any more.
let parentAtStart = getppid()
Thread.detachNewThread {
    while getppid() == parentAtStart { usleep(100_000) }
    _exit(0)
}

do {
    switch command {
    case "lmdb-append-loop":
        // lmdb-append-loop PATH DURABILITY: appends records 1, 2, ... forever, one commit each,
        // printing each sequence after its commit returned.
        var config = EnvironmentConfiguration()
        config.durability = durability(arguments[2])
        let env = try Environment.open(path: arguments[1], configuration: config)
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        var next = try env.read { txn in
            var last: UInt64 = 0
            try txn.forEach(in: db, reverse: true) { key, _ in last = try UInt64(lmdbBytes: key); return false }
            return last
        } + 1
        say("ready \(next)")
        while true {
            let sequence = next
            try env.write { txn in try txn.append(RecordPattern.bytes(for: sequence), forKey: sequence, in: db) }
            say("committed \(sequence)")
            next += 1
        }

    case "lmdb-slow-commits":
        // lmdb-slow-commits PATH MILLIS: appends records 1, 2, ... forever, one commit each, each
        // write transaction held open for MILLIS ms; prints "committed N" after each commit.
        let env = try Environment.open(path: arguments[1])
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let hold = UInt32(arguments[2])! * 1000
        var next: UInt64 = 1
        say("ready")
        while true {
            let sequence = next
            try env.write { txn in
                try txn.append(RecordPattern.bytes(for: sequence), forKey: sequence, in: db)
                usleep(hold)
            }
            say("committed \(sequence)")
            next += 1
        }

    case "lmdb-open-race":
        // lmdb-open-race PATH SECONDS: for SECONDS, two threads open PATH and drop it again, one
        // with the default configuration and one with another, so that the second's opens are
        // refused while the first's environment may be closing; prints "done" at the end.
        let path = arguments[1]
        let deadline = ContinuousClock.now + .seconds(Int(arguments[2]) ?? 3)
        let group = DispatchGroup()
        for durability in [EnvironmentConfiguration.Durability.strict, .noSync] {
            DispatchQueue.global().async(group: group) {
                while ContinuousClock.now < deadline {
                    do throws(LMDBError) { _ = try Environment.open(path: path, configuration: .init(durability: durability)) } catch {
                        guard error.kind == .alreadyOpen else { fail("open: \(error)") }
                    }
                }
            }
        }
        group.wait()
        say("done")

    case "lmdb-files-replaced":
        // lmdb-files-replaced PATH: with an environment open on PATH, deletes the store's files and
        // opens the path again; reads through the open environment; closes it and opens the path
        // once more. Prints what each step gave. (In a process of its own: the sanitizers keep
        // tracking mutexes in a deleted lock file's mapping for as long as the process lives.)
        let path = arguments[1]
        do {
            let earlier = try Environment.open(path: path)
            let db: Database<UInt64, String> = try earlier.database(named: "kv")
            try earlier.write { txn in try txn.put("earlier", forKey: 1, in: db) }
            for file in ["data.mdb", "lock.mdb"] { try FileManager.default.removeItem(atPath: path + "/" + file) }
            switch Result(catching: { () throws(LMDBError) in try Environment.open(path: path) }) {
            case .success(let environment): say("opened while open: \(environment === earlier ? "the earlier one" : "another one")")
            case .failure(let error): say("opened while open: \(error.kind), \(error.recovery)")
            }
            say("earlier reads \(try earlier.read { txn in try txn.get(1, in: db) } ?? "nothing")")
        }
        let later = try Environment.open(path: path)
        let laterDB: Database<UInt64, String> = try later.database(named: "kv")
        say("after close: sees \(try later.read { txn in try txn.get(1, in: laterDB) } ?? "nothing")")

    case "lmdb-store-replaced-after-close":
        // lmdb-store-replaced-after-close PATH: runs a host whose worker takes 5 s to end once
        // cancelled, stops it (stopAndWait) and closes the store, still holding both; deletes
        // the store's files and opens a store at PATH again; then uses the closed store. Prints
        // what each step gave.
        let path = arguments[1]
        let store = try WorkflowStore.open(path: path)
        let host = try store.start(Lingering(seconds: 5), id: "lingering", configuration: DurableConfiguration(actions: Lingering.actions))
        let stopped = DispatchSemaphore(value: 0)
        Task.detached { await host.stopAndWait(); stopped.signal() }
        stopped.wait()
        try store.close()
        for file in ["data.mdb", "lock.mdb"] { try FileManager.default.removeItem(atPath: path + "/" + file) }
        do {
            let reopened = try WorkflowStore.open(path: path)
            say("reopened: \(try reopened.instances().count) instances")
        } catch {
            say("reopen failed: \(error)")
        }
        do {
            _ = try store.instances()
            say("closed store listed instances")
        } catch let error as DurableError {
            say("closed store: \(error.kind), \(error.storageFailure.map { "\($0.kind)" } ?? "-")")
        }
        withExtendedLifetime(host) {}

    case "lmdb-append-slowly":
        // lmdb-append-slowly PATH COUNT MILLIS: appends COUNT records, one commit each, pausing between.
        let env = try Environment.open(path: arguments[1])
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        let count = UInt64(arguments[2])!
        let pause = UInt32(arguments[3])! * 1000
        say("ready")
        for sequence in 1...count {
            try env.write { txn in try txn.append(RecordPattern.bytes(for: sequence), forKey: sequence, in: db) }
            say("committed \(sequence)")
            usleep(pause)
        }
        say("done")

    case "lmdb-fill":
        // lmdb-fill PATH MEGABYTES: writes MEGABYTES of 64 KiB records (the map grows as needed).
        let env = try Environment.open(path: arguments[1], configuration: .init(initialMapSize: 64 << 10))
        let db: Database<UInt64, [UInt8]> = try env.database(named: "bulk")
        let megabytes = UInt64(arguments[2])!
        for sequence in 1...(megabytes * 16) {
            try env.write { txn in try txn.put(RecordPattern.bytes(for: sequence, size: 64 << 10), forKey: sequence, in: db) }
        }
        say("filled \(try env.info().mapSize)")

    case "lmdb-hold-read":
        // lmdb-hold-read PATH: opens a read transaction and holds it until killed.
        let env = try Environment.open(path: arguments[1])
        let db: Database<UInt64, [UInt8]> = try env.database(named: "records")
        try env.read { txn in
            say("holding \(try txn.count(of: db)) \(try env.info().readersInUse)")
            while true { sleep(60) }
        }

    case "lmdb-open-unprivileged":
        // lmdb-open-unprivileged PATH: drops root privileges, then tries to open the store.
        if geteuid() == 0 {
            guard setgid(65534) == 0, setuid(65534) == 0 else { fail("cannot drop privileges") }
        }
        do {
            _ = try Environment.open(path: arguments[1])
            say("opened")
        } catch {
            say("error \(error.kind) \(error.operation) | \(error)")
        }

    case "durable-counter-loop":
        // durable-counter-loop STORE MODE: resumes (or starts) instance "torture" and sends
        // Add(amount: n) for n = applied+1, applied+2, ... as fast as it can, printing "ack n"
        // once n is committed (strict and processCrashSafe: when send returns; grouped: after
        // each flush).
        let mode: DurableConfiguration.Mode
        switch arguments[2] {
        case "grouped": mode = .grouped(maxBatch: 64, maxDelay: .milliseconds(2))
        case "processCrashSafe": mode = .processCrashSafe(syncInterval: .milliseconds(50))
        default: mode = .strict
        }
        let configuration = DurableConfiguration(mode: mode, actions: DurableCounter.actions, snapshotEvery: 50)
        let store = try WorkflowStore.open(path: arguments[1])
        let host = try store.instance(id: "torture") == nil
            ? try store.start(DurableCounter(), id: "torture", configuration: configuration)
            : try store.resume(id: "torture", as: DurableCounter.self, configuration: configuration)
        var next = host.rendering.state.applied + 1
        say("ready \(host.rendering.state.applied) \(host.rendering.state.count)")
        let sink = host.rendering.sink
        while true {
            if case .grouped = mode {
                for amount in next..<(next + 10) { sink.send(.init(amount: amount)) }
                let flushed = DispatchSemaphore(value: 0)
                Task.detached { await host.flush(); flushed.signal() }
                flushed.wait()
                next += 10
                say("ack \(next - 1)")
            } else {
                sink.send(.init(amount: next))
                if let failure = host.failure { fail("host failed: \(failure)") }
                say("ack \(next)")
                next += 1
            }
        }

    case "durable-counters-loop":
        // durable-counters-loop STORE MODE N [CHECKPOINT [PREFIX]]: resumes (or starts) instances
        // "t0"..."tN-1" ("PREFIX0"... when given; an LMDB store's journal checkpointed every
        // CHECKPOINT entries; STORE may be a postgres:// URL); prints
        // "state I APPLIED COUNT" for each, then "ready"; then a task per instance loops
        // `await sendAndWait(Add(amount: n))` for n = applied+1, applied+2, ..., printing
        // "ack I n" once n is committed. The instances share the store's commits.
        let mode: DurableConfiguration.Mode = arguments[2] == "grouped" ? .grouped(maxBatch: 64, maxDelay: .milliseconds(2)) : .strict
        let configuration = DurableConfiguration(mode: mode, actions: DurableCounter.actions, snapshotEvery: 50)
        let store = try openStore(arguments[1], checkpointEntries: arguments.count > 4 ? Int(arguments[4])! : nil)
        let prefix = arguments.count > 5 ? arguments[5] : "t"
        let hosts = try (0..<Int(arguments[3])!).map { index in
            try store.instance(id: "\(prefix)\(index)") == nil
                ? try store.start(DurableCounter(), id: "\(prefix)\(index)", configuration: configuration)
                : try store.resume(id: "\(prefix)\(index)", as: DurableCounter.self, configuration: configuration)
        }
        for (index, host) in hosts.enumerated() {
            say("state \(index) \(host.rendering.state.applied) \(host.rendering.state.count)")
        }
        say("ready")
        for (index, host) in hosts.enumerated() {
            Task.detached {
                var next = host.rendering.state.applied + 1
                while true {
                    guard await host.rendering.sink.sendAndWait(.init(amount: next)) else { fail("t\(index): not applied: \(String(describing: host.failure))") }
                    say("ack \(index) \(next)")
                    next += 1
                }
            }
        }
        while true { sleep(60) }

    case "signal-consume":
        // signal-consume STORE SIGNAL: consumes SIGNAL with a durable, transactional consumer whose
        // handler records each version in "test.delivered" (insert: a duplicate is counted in
        // "test.duplicates") and prints "got N"; exits after a terminating version.
        let signal = SignalID(arguments[2])!
        let center = try SignalCenter.open(path: arguments[1], processIdentity: "consumer")
        let delivered = try center.table(named: "test.delivered"), duplicates = try center.table(named: "test.duplicates")
        let order = try center.table(named: "test.order")
        let consumer = try center.register(signal, owner: "test", behaviour: .untilTerminated, scope: .durable,
                                           id: ConsumerID(stableName: "test-consumer"))
        let bytes: @Sendable (UInt64) -> [UInt8] = { value in withUnsafeBytes(of: value.bigEndian) { Array($0) } }
        center.attach(consumer, handler: .transactional { delivery, txn in
            if try !txn.insert([1], forKey: bytes(delivery.version), in: delivered) {
                try txn.put([1], forKey: bytes(delivery.version), in: duplicates)
            }
            // Key 0 holds the last version handled; any other key is a version that did not follow it.
            let previous = try txn.value(forKey: bytes(0), in: order).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } ?? 0
            if delivery.version != previous + 1 { try txn.put(bytes(previous), forKey: bytes(delivery.version), in: order) }
            try txn.put(bytes(delivery.version), forKey: bytes(0), in: order)
        })
        say("ready")
        // The terminating delivery's commit removes the consumer: wait for that commit.
        while try center.consumers().contains(where: { $0.id == consumer }) { usleep(2000) }
        say("done")

    case "signal-wait-workflow":
        // signal-wait-workflow STORE SIGNAL: resumes (or starts) instance "waiter" of AwaitUpload,
        // prints "waiting", then "received VALUE" once the signal's delivery is applied.
        let signal = SignalID(arguments[2])!
        let center = try SignalCenter.open(path: arguments[1], processIdentity: "waiter")
        let configuration = AwaitUpload.configuration(center: center)
        let host = try center.store.instance(id: "waiter") == nil
            ? try center.store.start(AwaitUpload(signal: signal), id: "waiter", configuration: configuration)
            : try center.store.resume(id: "waiter", as: AwaitUpload.self, configuration: configuration)
        say("waiting \(host.rendering.deliveries)")
        while host.rendering.uploaded == nil { usleep(1000) }
        say("received \(host.rendering.uploaded!) \(host.rendering.deliveries)")

    case "feedback-loop":
        // feedback-loop STORE: resumes (or starts) the durable Tally loop "tally" with a feedback
        // that prints "saw N" for every event it sees, then adds 1, 2, 3, ... printing "ack N"
        // after each is committed (strict).
        let store = try WorkflowStore.open(path: arguments[1])
        let loop = try FeedbackLoop.durable(
            store: store, id: "tally", reducer: Tally(),
            feedbacks: [.observing { reduced in if case .add(let value) = reduced.event { say("saw \(value)") } }])
        say("ready \(loop.state.count) \(loop.state.sum)")
        loop.start()
        var next = loop.state.count + 1
        while true {
            loop.send(.add(next))
            say("ack \(next)")
            next += 1
            usleep(500)
        }

    case "signal-post":
        // signal-post STORE SIGNAL COUNT PAUSE_MICROS [TERMINATE_LAST]: posts versions 1...COUNT.
        let signal = SignalID(arguments[2])!
        let center = try SignalCenter.open(path: arguments[1], processIdentity: "poster")
        let count = Int(arguments[3])!, pause = UInt32(arguments[4])!
        let terminateLast = arguments.count > 5 && arguments[5] == "terminate"
        for index in 1...count {
            try center.post(signal, value: index, terminatesConsumersAfterDelivery: terminateLast && index == count)
            if pause > 0 { usleep(pause) }
        }
        say("posted \(count)")

    case "workflow-send-during-render":
        // Runs a workflow whose render sends an action: the default policy stops the process.
        let host = WorkflowHost(workflow: SendsDuringRender())
        host.update(workflow: SendsDuringRender(sendNow: true))
        say("not stopped: \(host.rendering.count)")

    case "signal-run-consumer":
        // signal-run-consumer STORE SIGNAL IDENTITY: opens a signal center as IDENTITY, registers a
        // run-scoped consumer of SIGNAL, prints "ready", then "got V" for each version; runs until killed.
        let center = try SignalCenter.open(path: arguments[1], processIdentity: arguments[3])
        let consumer = try center.register(SignalID(arguments[2])!, owner: "replica-\(getpid())")
        center.attach(consumer, handler: .atMostOnce { delivery in say("got \(delivery.version)") })
        say("ready")
        while true { sleep(60) }

    case "canonical-encode":
        // canonical-encode COUNT [json]: prints the binary (or JSON) encoding, in hex, of TagBook's
        // sample state with COUNT tags: a Set, a dictionary keyed by a struct, nested sets.
        let codec: any PayloadCodec = arguments.count > 2 && arguments[2] == "json" ? JSONPayloadCodec() : BinaryPayloadCodec()
        let bytes = try codec.encode(TagBook.sampleState(count: Int(arguments[1])!))
        say(bytes.map { String($0, radix: 16) }.joined(separator: " "))

    case "tagbook-write":
        // tagbook-write STORE COUNT: starts instance "tags" of TagBook and tags it COUNT times (strict).
        let store = try WorkflowStore.open(path: arguments[1])
        let host = try store.start(TagBook(), id: "tags", configuration: DurableConfiguration(actions: TagBook.actions))
        for index in 0..<Int(arguments[2])! { host.rendering.sink.send(.init(name: "tag-\(index)")) }
        if let failure = host.failure { fail("host failed: \(failure)") }
        say("done \(host.rendering.state.tags.count)")

    case "hashorder-write":
        // hashorder-write STORE COUNT: starts instance "old" of HashOrderBook and tags it COUNT times.
        let store = try WorkflowStore.open(path: arguments[1])
        let host = try store.start(HashOrderBook(), id: "old", configuration: HashOrderBook.configuration)
        for index in 0..<Int(arguments[2])! { host.rendering.sink.send(.init(name: "tag-\(index)")) }
        if let failure = host.failure { fail("host failed: \(failure)") }
        say("done \(host.rendering.state.tags.count)")

    case "lmdb-create-slowly":
        // lmdb-create-slowly SOURCE DIR: plays a process that is creating the store at DIR as
        // LMDB's first opener does: holds the lock file's exclusive lock while data.mdb holds only
        // zeros; prints "creating", then after 500 ms writes the data file of a store made at
        // SOURCE (one record "made" = [7]), prints "created" and exits (releasing the lock).
        do {
            let env = try Environment.open(path: arguments[1])
            let db: Database<String, [UInt8]> = try env.database(named: "records")
            try env.write { txn in try txn.put([7], forKey: "made", in: db) }
        }
        let source = arguments[1], target = arguments[2]
        try FileManager.default.copyItem(atPath: source + "/lock.mdb", toPath: target + "/lock.mdb")
        let lockFD = open(target + "/lock.mdb", O_RDWR)
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard lockFD >= 0, fcntl(lockFD, F_SETLK, &lock) == 0 else { fail("cannot lock \(target)/lock.mdb: \(errno)") }
        let data = try Data(contentsOf: URL(fileURLWithPath: source + "/data.mdb"))
        try Data(count: 8192).write(to: URL(fileURLWithPath: target + "/data.mdb"))
        say("creating")
        usleep(500_000)
        try data.write(to: URL(fileURLWithPath: target + "/data.mdb"))
        say("created")

    case "pg-host":
        // pg-host URL MACHINE MODE LEASE_MS: a host of a PostgreSQL store on machine MACHINE with
        // leases of LEASE_MS; prints "host ready", then every 50 ms takes over the instances the
        // store assigns it (printing "state ID APPLIED COUNT AT" after each resume, AT being when
        // the resume returned on `MachineClock`) and drives each
        // with `await sendAndWait(Add(amount: n))` for n = applied+1, ..., printing "ack ID n"
        // once n is committed, and "lost ID" when a send fails (the instance was taken away).
        // With CODE_VERSION and SUPPORTED (a comma-separated list of versions, "none" among them
        // for instances started under none, or "all"): the host's build runs under that code
        // version and takes over only the instances whose code version it supports.
        #if Postgres
        guard var configuration = PostgresConfiguration(url: arguments[1]) else { fail("not a PostgreSQL URL: \(arguments[1])") }
        configuration.machine = arguments[2]
        configuration.leaseTime = .milliseconds(Int(arguments[4])!)
        let mode: DurableConfiguration.Mode = arguments[3] == "grouped" ? .grouped(maxBatch: 64, maxDelay: .milliseconds(2)) : .strict
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        var counters = DurableConfiguration(mode: mode, actions: DurableCounter.actions, snapshotEvery: 50)
        if arguments.count > 6 {
            counters.codeVersion = arguments[5]
            let listed = Set(arguments[6].split(separator: ",").map(String.init))
            counters.supportedCodeVersions = listed == ["all"] ? .all : .only(listed.subtracting(["none"]), unversioned: listed.contains("none"))
        }
        let running = RunningSet()
        let watch = LoopWatch()
        say("host ready")
        while true {
            // A service goes on when the database cannot be reached for a moment.
            let assigned: [String]
            do {
                watch.enter("listing")
                assigned = try storage.instancesToTakeOver(supporting: counters.supportedCodeVersions)
            } catch {
                say("skip listing \(error)")
                watch.enter("sleeping")
                usleep(50_000)
                continue
            }
            for id in assigned where running.insert(id) {
                let host: WorkflowHost<DurableCounter>
                do {
                    watch.enter("resuming \(id)")
                    host = try store.resume(id: id, as: DurableCounter.self, configuration: counters)
                } catch {
                    say("skip \(id) \(error)")
                    running.remove(id)
                    continue
                }
                let applied = host.rendering.state.applied
                say("state \(id) \(applied) \(host.rendering.state.count) \(MachineClock.now)")
                Task.detached {
                    var next = applied + 1
                    while await host.rendering.sink.sendAndWait(.init(amount: next)) {
                        say("ack \(id) \(next)")
                        next += 1
                    }
                    say("lost \(id)")
                    await host.stopAndWait()
                    running.remove(id)
                }
            }
            watch.enter("sleeping")
            usleep(50_000)
        }
        #else
        fail("built without the Postgres trait")
        #endif

    case "pg-signal-host":
        // pg-signal-host URL MACHINE LEASE_MS: a host of SignalTally instances on a PostgreSQL
        // store: takes over what the store assigns it (printing "state ID COUNT SUM" after each
        // resume), then prints "got ID COUNT SUM" whenever an instance applied a version, and
        // "lost ID" when one is taken away.
        #if Postgres
        guard var configuration = PostgresConfiguration(url: arguments[1]) else { fail("not a PostgreSQL URL: \(arguments[1])") }
        configuration.machine = arguments[2]
        configuration.leaseTime = .milliseconds(Int(arguments[3])!)
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let center = try SignalCenter.open(store: store, processIdentity: "tally-\(arguments[2])", configuration: .init(pollInterval: .milliseconds(20)))
        let tallies = SignalTally.configuration(center: center)
        var running: [String: (host: WorkflowHost<SignalTally>, seen: Int)] = [:]
        say("host ready")
        while true {
            for id in try storage.instancesToTakeOver() where running[id] == nil {
                do {
                    let host = try store.resume(id: id, as: SignalTally.self, configuration: tallies)
                    running[id] = (host, host.rendering.count)
                    say("state \(id) \(host.rendering.count) \(host.rendering.sum)")
                } catch {
                    say("skip \(id) \(error)")
                }
            }
            for (id, entry) in running {
                if entry.host.failure != nil {
                    say("lost \(id)")
                    entry.host.stop()
                    running[id] = nil
                } else if entry.host.rendering.count != entry.seen {
                    running[id]?.seen = entry.host.rendering.count
                    say("got \(id) \(entry.host.rendering.count) \(entry.host.rendering.sum)")
                }
            }
            usleep(20_000)
        }
        #else
        fail("built without the Postgres trait")
        #endif

    case "checkout-loop":
        // checkout-loop STORE MODE PREFIX: 8 tasks run checkouts "PREFIX-N" (N = 0, 1, ...):
        // each starts one with start(with: Open(items: N)) and prints "started N", pays 1 three
        // times (total 3) with sendAndWait, awaits its completion and prints "finished N ITEMS PAID".
        let mode: DurableConfiguration.Mode = arguments[2] == "grouped" ? .grouped : .strict
        let configuration = DurableConfiguration(mode: mode, actions: Checkout.actions)
        let store = try openStore(arguments[1])
        let prefix = arguments[3]
        say("ready")
        for task in 0..<8 {
            Task.detached {
                var number = task
                while true {
                    do {
                        let host = try store.start(Checkout(total: 3), id: "\(prefix)-\(number)", with: Checkout.Open(items: number),
                                                   configuration: configuration)
                        say("started \(number)")
                        for _ in 0..<3 {
                            guard await host.rendering.pay.sendAndWait(.init(amount: 1)) else {
                                fail("\(prefix)-\(number): not applied: \(String(describing: host.failure))")
                            }
                        }
                        guard case .receipt(let receipt) = try await host.completion else { fail("\(prefix)-\(number): no receipt") }
                        say("finished \(number) \(receipt.items) \(receipt.paid)")
                    } catch {
                        fail("\(prefix)-\(number): \(error)")
                    }
                    number += 8
                }
            }
        }
        while true { sleep(60) }

    case "service-counters":
        // service-counters STORE N: a WorkflowService runs DurableCounter instances "t0"..."tN-1"
        // in `grouped` mode inside a ServiceGroup that shuts down gracefully on SIGTERM; prints
        // "ready". A task per instance sends Add(amount: n * 1000 + I) for n = 1, 2, ... with
        // `send` (which returns once applied, before its commit); an observer prints
        // "applied AMOUNT" as each is applied. After the graceful shutdown: "stopped", exit 0.
        let logger = Logger(label: "service-counters")
        var configuration = DurableConfiguration(mode: .grouped, actions: DurableCounter.actions, snapshotEvery: nil)
        configuration.host.observers = [AppliedPrinter()]
        let store = try openStore(arguments[1])
        let service = WorkflowService(store: store, logger: logger)
        service.register(DurableCounter.self, configuration: configuration)
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        let instances = Int(arguments[2])!
        Task.detached {
            try await service.untilRunning()
            for index in 0..<instances {
                let host = try await service.startOrResume(DurableCounter(), id: "t\(index)")
                Task.detached {
                    var n = host.rendering.state.applied + 1
                    while service.state == .running {
                        host.rendering.sink.send(.init(amount: n * 1000 + index))
                        n += 1
                        if n % 16 == 0 { try? await Task.sleep(for: .microseconds(300)) }
                    }
                }
            }
            say("ready")
        }
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            do { try await group.run() } catch { say("group failed: \(error)") }
            finished.signal()
        }
        finished.wait()
        say("stopped \(service.state)")
        exit(0)

    case "resume-counter":
        // resume-counter STORE ID: resumes DurableCounter instance ID and prints "count N", or
        // "error KIND sequence S: DESCRIPTION" for a DurableError.
        let store = try WorkflowStore.open(path: arguments[1])
        do {
            let host = try store.resume(id: arguments[2], as: DurableCounter.self, configuration: DurableConfiguration(actions: DurableCounter.actions))
            say("count \(host.rendering.state.count)")
        } catch let error as DurableError {
            say("error \(error.kind) sequence \(error.sequence.map(String.init) ?? "-"): \(error)")
        }

    case "observer-worker-teardown":
        // observer-worker-teardown ROUNDS: with an observer attached, renders 1,000 children that
        // each run a never-ending worker, drops 500 of them, stops the host; ROUNDS times.
        let rounds = Int(arguments[1])!
        for _ in 0..<rounds {
            let host = WorkflowHost(workflow: WorkerFleet(children: 1000), configuration: HostConfiguration(observers: [SilentObserver()]))
            host.update(workflow: WorkerFleet(children: 500))
            guard host.rendering.running == 500 else { fail("expected 500 children, saw \(host.rendering.running)") }
            let stopped = DispatchSemaphore(value: 0)
            Task.detached { await host.stopAndWait(); stopped.signal() }
            stopped.wait()
        }
        say("done \(rounds)")

    case "upgrade-seed":
        // upgrade-seed STORE: the first build of the upgrade suite's order service starts one
        // instance per stage (its workers wait an hour), prints "seeded", then runs until killed;
        // on SIGTERM it stops every host gracefully, closes the store, prints "stopped" and exits.
        UpgradeOutside.answersIn = 3_600_000
        let store = try openStore(arguments[1])
        let hosts = try waitFor { try await UpgradeOrder<BuildV1>.seed(store) }
        signal(SIGTERM, SIG_IGN)
        let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        // Not on the main actor (top-level code is): the handler runs on a dispatch queue.
        terminate.setEventHandler { @Sendable in
            _ = try? waitFor { for host in hosts { await host.stopAndWait() } }
            try? store.close()
            say("stopped")
            exit(0)
        }
        terminate.resume()
        say("seeded")
        while true { sleep(60) }

    case "upgrade-seed-many":
        // upgrade-seed-many STORE COPIES: the first build seeds COPIES copies of the stages
        // (ids "order-sN-C"), commits without syncs, stops them and prints "seeded N".
        UpgradeOutside.answersIn = 3_600_000
        let store = try openStore(arguments[1])
        let copies = Int(arguments[2])!
        try waitFor {
            for copy in 0..<copies {
                for host in try await UpgradeOrder<BuildV1>.seed(store, mode: .processCrashSafe, suffix: "-\(copy)") { await host.stopAndWait() }
            }
        }
        try store.close()
        say("seeded \(copies * UpgradeStage.allCases.count)")

    case "upgrade-resume-all":
        // upgrade-resume-all STORE BUILD: times resumeAll of every instance by BUILD (the outside
        // world held, time standing still) and prints "resumed N failed M in SECONDS".
        UpgradeOutside.isHeld = true
        guard let build = upgradeBuilds.first(where: { $0.name == arguments[2] }) else { fail("no build \(arguments[2])") }
        let store = try openStore(arguments[1])
        let clock = ManualClock(now: try store.instances().map(\.created).min() ?? .now())
        func resumeAll<Build: UpgradeBuild>(_ build: Build.Type) throws {
            let started = ContinuousClock.now
            let results = try store.resumeAll(UpgradeOrder<Build>.self, configuration: UpgradeOrder<Build>.configuration(clock: clock))
            let elapsed = ContinuousClock.now - started
            say("resumed \(results.filter { $0.host != nil }.count) failed \(results.filter { $0.host == nil }.count) in \(elapsed)")
            let hosts = results.compactMap(\.host)
            try waitFor { for host in hosts { await host.stopAndWait() } }
        }
        try resumeAll(build)
        try store.close()

    case "upgrade-run":
        // upgrade-run STORE BUILD: the build named BUILD resumes every instance and prints
        // "resumed ID STATE" (the state the resume left, as NormalizedOrder JSON: time stands
        // still at the store's first start and the outside world is held until all are printed)
        // or "failed ID KIND"; then time runs, the outside world answers in 50 ms, and after a
        // second it prints "after ID STATE" for each; then it starts "order-new", pays it, prints
        // "new STATE", stops and prints "done".
        UpgradeOutside.isHeld = true
        UpgradeOutside.answersIn = 50
        guard let build = upgradeBuilds.first(where: { $0.name == arguments[2] }) else { fail("no build \(arguments[2])") }
        let store = try openStore(arguments[1])
        let clock = ManualClock(now: try store.instances().map(\.created).min() ?? .now())
        func run<Build: UpgradeBuild>(_ build: Build.Type) throws {
            var configuration = UpgradeOrder<Build>.configuration(clock: clock)
            var hosts: [(String, WorkflowHost<UpgradeOrder<Build>>)] = []
            for result in try store.resumeAll(UpgradeOrder<Build>.self, configuration: configuration) {
                if let host = result.host {
                    say("resumed \(result.id) \(NormalizedOrder(host.rendering.state).json)")
                    hosts.append((result.id, host))
                } else {
                    say("failed \(result.id) \(result.error.map { "\($0.kind)" } ?? "?")")
                }
            }
            clock.advance(to: .now())
            UpgradeOutside.isHeld = false
            configuration.host.clock = SystemClock()
            usleep(1_000_000)
            for (id, host) in hosts { say("after \(id) \(NormalizedOrder(host.rendering.state).json)") }
            let fresh = try store.start(UpgradeOrder<Build>(id: "order-new"), id: "order-new", configuration: configuration)
            try waitFor {
                _ = await fresh.rendering.addItem.sendAndWait(.init(name: "sku-9", price: 100))
                _ = await fresh.rendering.pay.sendAndWait(.init())
            }
            say("new \(NormalizedOrder(fresh.rendering.state).json)")
            let running = hosts.map(\.1)
            try waitFor {
                for host in running { await host.stopAndWait() }
                await fresh.stopAndWait()
            }
        }
        try run(build)
        try store.close()
        say("done")

    case "upgrade-wfctl":
        // upgrade-wfctl BUILD ARGUMENTS...: `wfctl ARGUMENTS` of a tool that registers the order
        // service's build BUILD (as a service's own tool does); exits with its code.
        guard let build = upgradeBuilds.first(where: { $0.name == arguments[1] }) else { fail("no build \(arguments[1])") }
        func types<Build: UpgradeBuild>(_ build: Build.Type) -> WorkflowTypes {
            var types = WorkflowTypes()
            types.register(UpgradeOrder<Build>.self, configuration: UpgradeOrder<Build>.configuration())
            return types
        }
        exit(WorkflowTool.run(types: types(build), arguments: Array(arguments.dropFirst(2))))

    case "count-grouped":
        // count-grouped STORE N: one DurableCounter in grouped mode takes N actions, then a flush
        // (a fixed amount of work, for instruction counts under callgrind).
        let store = try WorkflowStore.open(path: arguments[1])
        let host = try store.start(DurableCounter(), id: "c", configuration: DurableConfiguration(mode: .grouped, actions: DurableCounter.actions))
        for amount in 0..<Int(arguments[2])! { host.rendering.sink.send(.init(amount: amount)) }
        try waitForCount { await host.flush(); await host.stopAndWait() }
        say("done \(host.rendering.state.applied)")

    case "drain-payments":
        // drain-payments STORE LEDGER N SLOWEST_MS DRAIN_MS: a WorkflowService (grouped mode, in
        // a ServiceGroup that shuts down gracefully on SIGTERM, draining for DRAIN_MS) runs
        // LedgerPayment instances "pay-0"..."pay-N-1" (started or resumed) against a LedgerBank
        // writing to LEDGER whose calls take up to SLOWEST_MS; prints "ready" once all are
        // started, "finished ID" as each finishes and "all finished" (then shuts down by
        // itself); after the shutdown "drained D abandoned A" and "stopped". DRAIN_MS "none": no drain.
        let logger = Logger(label: "drain-payments")
        var configuration = DurableConfiguration(mode: .grouped, actions: LedgerPayment.actions)
        configuration.host.provide(LedgerBank(ledger: arguments[2], slowest: .milliseconds(Int(arguments[4])!)))
        let store = try openStore(arguments[1])
        // "none": the service stops its hosts at once, as before it drained.
        let drainDeadline = Int(arguments[5]).map { Duration.milliseconds($0) }
        let service = WorkflowService(store: store, logger: logger, drainDeadline: drainDeadline)
        service.register(LedgerPayment.self, configuration: configuration)
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        let payments = Int(arguments[3])!
        Task.detached {
            try await service.untilRunning()
            let finished = Lock(0)
            for index in 0..<payments {
                let id = "pay-\(index)"
                let host = try await service.startOrResume(LedgerPayment(amount: 100 + index), id: id)
                Task.detached {
                    guard (try? await host.completion) != nil else { return }
                    say("finished \(id)")
                    if finished.withLock({ $0 += 1; return $0 }) == payments {
                        say("all finished")
                        await group.triggerGracefulShutdown()
                    }
                }
            }
            say("ready")
        }
        runUntilStopped(group)
        let drain = service.lastDrain
        say("drained \(drain?.drained ?? -1) abandoned \(drain?.abandoned ?? -1)")
        say("stopped")
        exit(0)

    case "booking-service":
        // booking-service STORE LEDGER COUNT SEED: a WorkflowService (strict mode, in a
        // ServiceGroup that shuts down gracefully on SIGTERM) runs Booking instances "bk-0"...
        // "bk-COUNT-1", each holding for 3,000 to 6,000 ms (from a generator seeded with SEED;
        // longer than starting them all takes on a loaded machine, so that most still hold when
        // the requests come, 0 to 2 s after "ready"), against a BookingDesk writing to LEDGER;
        // prints "ready" once all are started, then serves (the control plane's requests too)
        // until SIGTERM, and prints "stopped".
        // Logs only warnings and errors.
        // Warnings only: the parent reads this process's output after it stops, and a line per
        // control request would fill the pipe meanwhile (and block the hosts that log).
        var logger = Logger(label: "booking-service")
        logger.logLevel = .warning
        let configuration = Booking.configuration(desk: BookingDesk(ledger: arguments[2]))
        let store = try openStore(arguments[1])
        let service = WorkflowService(store: store, logger: logger, adoptionInterval: .milliseconds(200))
        service.register(Booking.self, configuration: configuration)
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        let bookings = Int(arguments[3])!
        var generator = SeededGenerator(state: UInt64(arguments[4])!)
        let holds = (0..<bookings).map { _ in Int.random(in: 3_000...6_000, using: &generator) }
        Task.detached {
            try await service.untilRunning()
            for index in 0..<bookings {
                _ = try await service.startOrResume(Booking(holdMilliseconds: holds[index]), id: "bk-\(index)")
            }
            say("ready")
        }
        runUntilStopped(group)
        say("stopped")
        exit(0)

    case "service-starts":
        // service-starts STORE N: a WorkflowService (strict mode, in a ServiceGroup that shuts
        // down on SIGTERM, with no drain) starts N DurableCounter instances at once through its
        // async `start`, each blocking on its first commit; prints "starting" once every start is
        // under way, "noticed AT" (MachineClock) as soon as the service is shutting down, and
        // "stopped STARTED" once it has, STARTED being how many starts returned a host.
        var logger = Logger(label: "service-starts")
        logger.logLevel = .warning
        let store = try openStore(arguments[1])
        let service = WorkflowService(store: store, logger: logger, drainDeadline: nil)
        service.register(DurableCounter.self, configuration: DurableConfiguration(actions: DurableCounter.actions))
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        let count = Int(arguments[2])!
        let started = Lock(0)
        Thread.detachNewThread {
            while service.state != .shuttingDown && service.state != .stopped { usleep(500) }
            say("noticed \(MachineClock.now)")
        }
        Task.detached {
            try await service.untilRunning()
            for index in 0..<count {
                Task.detached {
                    if (try? await service.start(DurableCounter(), id: "s\(index)")) != nil { started.withLock { $0 += 1 } }
                }
            }
            say("starting")
        }
        runUntilStopped(group)
        say("stopped \(started.withLock { $0 })")
        exit(0)

    case "service-run-once":
        // service-run-once STORE: opens the store and runs a WorkflowService over it (its page walk
        // at start as by default); prints "running" and shuts it down once it runs, or "failed:
        // ERROR" when its run throws.
        var logger = Logger(label: "service-run-once")
        logger.logLevel = .warning
        let store = try WorkflowStore.open(path: arguments[1])
        let service = WorkflowService(store: store, logger: logger, drainDeadline: nil)
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        Task.detached {
            guard (try? await service.untilRunning()) != nil else { return }
            say("running")
            await group.triggerGracefulShutdown()
        }
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do { try await group.run() } catch { say("failed: \(error)") }
            done.signal()
        }
        done.wait()
        exit(0)

    case "ticker-service":
        // ticker-service STORE MACHINE LEASE_MS: a WorkflowService (grouped mode) running Ticker
        // instances: it starts none, and every 100 ms adopts the running ones no live host holds
        // (on PostgreSQL as the store spreads them, as a host of machine MACHINE whose leases
        // last LEASE_MS); prints "ready" once it runs, and serves until SIGTERM (or SIGKILL).
        var logger = Logger(label: "ticker-service")
        logger.logLevel = .warning
        let store: WorkflowStore
        if arguments[1].hasPrefix("postgres://") {
            #if Postgres
            guard var configuration = PostgresConfiguration(url: arguments[1]) else { fail("not a PostgreSQL URL: \(arguments[1])") }
            configuration.machine = arguments[2]
            configuration.leaseTime = .milliseconds(Int(arguments[3])!)
            store = WorkflowStore(backend: try PostgresStorage.open(configuration))
            #else
            fail("built without the Postgres trait")
            #endif
        } else {
            store = try openStore(arguments[1])
        }
        let service = WorkflowService(store: store, logger: logger, instanceCountsInterval: nil, adoptionInterval: .milliseconds(100))
        service.register(Ticker.self, configuration: DurableConfiguration(mode: .grouped, actions: Ticker.actions, snapshotEvery: 20))
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)
        Task.detached {
            try await service.untilRunning()
            say("ready")
        }
        runUntilStopped(group)
        say("stopped")
        exit(0)

    case "idle":
        // idle: prints "idle", then does nothing until it is killed (or its parent is gone).
        say("idle")
        while true { sleep(60) }

    case "spawn-idle":
        // spawn-idle: starts the helper running "idle", prints "child PID" once it is idle, then
        // does nothing until it is killed.
        let child = try ChildProcess(["idle"], executable: CommandLine.arguments[0])
        guard child.readLine() == "idle" else { fail("the child did not start") }
        say("child \(child.pid)")
        while true { sleep(60) }

    default:
        fail("unknown command \(command)")
    }
} catch {
    fail("\(error)")
}
