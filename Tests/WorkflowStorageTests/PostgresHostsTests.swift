#if Postgres
import DurableWorkflow
import Foundation
import PostgresNIO
import TestSupport
import TestWorkflows
import Testing
import WorkflowPostgres
import WorkflowSignals
import WorkflowStorage

/// Several host processes on one PostgreSQL store, each standing for a machine of its own (a
/// machine name of its own, so that claims are judged by leases, not by process liveness).
@Suite("PostgreSQL hosts: leases, takeover, fencing", .serialized, .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresHostsTests {
    static let leaseMilliseconds = 1_000

    /// A store of running counter instances `ids` that no host holds, started under
    /// `codeVersion`; returns its URL.
    static func storeOfReleasedInstances(_ ids: [String], codeVersion: String? = nil) async throws -> (PostgresConfiguration, String) {
        let configuration = PostgresBackendTests.fresh()
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        var counters = DurableConfiguration(actions: DurableCounter.actions)
        counters.codeVersion = codeVersion
        for id in ids {
            let host = try store.start(DurableCounter(), id: id, configuration: counters)
            await host.stopAndWait()
        }
        storage.close()
        let url = "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
        return (configuration, url)
    }

    /// After the hosts' leases ran out: resumes each counter here and checks that it holds every
    /// acknowledged action, each applied once, in a dense log.
    static func replayAndCheck(_ ids: [String], acknowledged: [String: Int], configuration: PostgresConfiguration, verify: Bool = false) async throws {
        try await Task.sleep(for: .milliseconds(leaseMilliseconds + 300))
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        let counters = DurableConfiguration(actions: DurableCounter.actions)
        for id in ids {
            let host = try store.resume(id: id, as: DurableCounter.self, configuration: counters)
            let state = host.rendering.state
            #expect(state.applied >= acknowledged[id] ?? 0, "\(id): \(state.applied) applied, \(acknowledged[id] ?? 0) acknowledged")
            #expect(state.count == state.applied * (state.applied + 1) / 2)
            #expect(try store.entries(of: id).map(\.sequence) == Array(1...UInt64(state.applied + 1)))
            await host.stopAndWait()
            if verify {
                let report = try store.verify(id: id, as: DurableCounter.self, configuration: counters)
                #expect(report.isConsistent, "\(String(describing: report.problem))")
            }
        }
    }

    /// Who holds `id` and which hosts the store counts as live, read from the server (for a
    /// failure's message).
    static func ownershipDump(_ id: String, schema: String) -> String {
        do {
            let instance = try PostgresBackendTests.sql(
                "SELECT owner_host, owner_pid, status FROM \(schema).wf_instance WHERE id = '\(id)'"
            ).map { row in "\(try row.decode((Int64, Int32, Int16).self))" }
            let hosts = try PostgresBackendTests.sql(
                """
                SELECT host_id, machine, label, lease_until > clock_timestamp(), takes_over,
                       (extract(epoch FROM lease_until - clock_timestamp()) * 1000)::bigint
                  FROM \(schema).wf_host ORDER BY host_id
                """
            ).map { row in "\(try row.decode((Int64, String, String, Bool, Bool, Int64).self))" }
            return "instance (owner host, pid, status) \(instance); hosts (id, machine, label, live, takes over, ms left) \(hosts)"
        } catch {
            return "could not read: \(error)"
        }
    }

    /// One host process and what it printed that matters.
    final class HostProcess {
        let child: ChildProcess
        let machine: String
        /// Instances it resumed and has not lost.
        var running: Set<String> = []
        /// How many lines it printed, the last one and when it was read (for a failure's message).
        var lines = 0
        var last = ""
        var lastRead = ContinuousClock.now

        init(
            url: String, machine: String, mode: String, codeVersion: String? = nil, supporting: String = "all",
            leaseMilliseconds: Int = PostgresHostsTests.leaseMilliseconds
        ) throws {
            self.machine = machine
            child = try ChildProcess(
                ["pg-host", url, machine, mode, "\(leaseMilliseconds)"] + (codeVersion.map { [$0, supporting] } ?? []),
                mergeStandardError: true)
        }
    }

    /// What every host acknowledged and resumed, checked as lines arrive.
    struct Ledger {
        var acknowledged: [String: Int] = [:]
        /// When each instance was last resumed, on `MachineClock`, as the host that resumed it
        /// says (however late its line is read).
        var resumed: [String: UInt64] = [:]

        /// What the hosts printed that is not an acknowledgement, and when: the story a failure tells.
        var story: [String] = []
        let started = ContinuousClock.now

        mutating func note(_ line: String, from host: HostProcess) {
            host.lines += 1
            host.last = line
            host.lastRead = .now
            let fields = line.split(separator: " ").map(String.init)
            if fields.first != "ack" {
                story.append("\((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds]))) \(host.machine): \(line)")
            }
            switch fields.first {
            case "ack" where fields.count == 3:
                acknowledged[fields[1]] = max(acknowledged[fields[1]] ?? 0, Int(fields[2]) ?? 0)
            case "state" where fields.count == 5:
                let id = fields[1], applied = Int(fields[2]) ?? -1, count = Int(fields[3]) ?? -1
                // The resumed state holds every acknowledged action, applied exactly once.
                #expect(applied >= (acknowledged[id] ?? 0), "\(host.machine) resumed \(id) with \(applied) applied, \(acknowledged[id] ?? 0) acknowledged")
                #expect(count == applied * (applied + 1) / 2, "\(host.machine) resumed \(id) with count \(count), not 1+...+\(applied)")
                host.running.insert(id)
                resumed[id] = UInt64(fields[4]) ?? 0
            case "lost" where fields.count == 2:
                host.running.remove(fields[1])
            case "host", "skip", "stalled":
                break
            case _ where fields.count > 1 && fields[1] == "warning":
                // The store's log: a lease renewal that failed while connections were cut.
                break
            default:
                Issue.record("\(host.machine): \(line)")
            }
        }

        /// Reads what `hosts` printed for `duration`.
        /// Reads what `hosts` printed for `duration`, a few lines from each in turn, so that one
        /// host's flood of acknowledgements neither keeps the others' lines (a takeover, say)
        /// waiting nor keeps the reader past its deadline.
        mutating func read(_ hosts: [HostProcess], for duration: Duration) {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline {
                for host in hosts {
                    for _ in 0..<64 {
                        guard let line = host.child.readLine(timeout: .milliseconds(2)) else { break }
                        note(line, from: host)
                    }
                }
            }
        }
    }

    @Test("a host killed on this machine: another host of the machine takes its instances over at once, not after its lease; while it lives, nobody does")
    func deadLocalHost() async throws {
        let ids = (0..<6).map { "local-\($0)" }
        var (configuration, url) = try await Self.storeOfReleasedInstances(ids)
        // Both hosts on one machine (this one), with leases far longer than the test waits.
        let machine = "machine-local", lease = 60_000
        configuration.machine = machine
        var ledger = Ledger()
        let first = try HostProcess(url: url, machine: machine, mode: "strict", leaseMilliseconds: lease)
        while Set(first.running) != Set(ids), ContinuousClock.now - ledger.started < .seconds(20) { ledger.read([first], for: .milliseconds(50)) }
        #expect(Set(first.running) == Set(ids), "the first host runs them all: \(first.running)")
        // While it lives, another host of the machine is given none of them.
        let looker = try PostgresStorage.open(configuration)
        #expect(try looker.instancesToTakeOver().isEmpty)
        looker.close()

        let second = try HostProcess(url: url, machine: machine, mode: "strict", leaseMilliseconds: lease)
        ledger.read([first, second], for: .milliseconds(500))
        #expect(second.running.isEmpty, "the second host took \(second.running) from a live host")
        let killed = MachineClock.now
        first.child.kill()
        for line in first.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: first) }
        #expect(try first.child.waitForExit() == 128 + SIGKILL)
        while !ids.allSatisfy({ id in ledger.resumed[id].map { $0 > killed } ?? false }), ContinuousClock.now - ledger.started < .seconds(40) {
            ledger.read([second], for: .milliseconds(50))
        }
        let slowest = ids.compactMap { ledger.resumed[$0].map { MachineClock.duration(from: killed, to: $0) } }.max() ?? .zero
        #expect(Set(second.running) == Set(ids), "the second host took over \(second.running); \(ledger.story.suffix(10))")
        #expect(slowest < .seconds(5), "the slowest takeover took \(slowest), with a lease of \(lease) ms")
        print("takeover of a host killed on the same machine: slowest \(slowest) (lease \(lease) ms)")
        second.child.kill()
        for line in second.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: second) }
        _ = try second.child.waitForExit()
        // This process, of the same machine, resumes each at once too, with every acknowledged action.
        try await Self.replayAndCheck(ids, acknowledged: ledger.acknowledged, configuration: configuration)
    }

    @Test("a mixed fleet: a host of the new build takes over none of a killed old host's instances; a host that runs the old version takes them all over, and the new build's host still none")
    func mixedFleet() async throws {
        let ids = (0..<6).map { "old-\($0)" }
        let (configuration, url) = try await Self.storeOfReleasedInstances(ids, codeVersion: "v1")
        var ledger = Ledger()
        let old = try HostProcess(url: url, machine: "machine-old", mode: "strict", codeVersion: "v1", supporting: "v1")
        let new = try HostProcess(url: url, machine: "machine-new", mode: "strict", codeVersion: "v2", supporting: "v2")
        while Set(old.running) != Set(ids), ContinuousClock.now - ledger.started < .seconds(10) { ledger.read([old, new], for: .milliseconds(50)) }
        #expect(Set(old.running) == Set(ids), "the old host runs them all: \(old.running)")
        old.child.kill()
        for line in old.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: old) }
        _ = try old.child.waitForExit()
        // Well past the lease: the new build's host lists them, runs none of them.
        ledger.read([new], for: .milliseconds(Self.leaseMilliseconds) + .seconds(2))
        #expect(new.running.isEmpty, "the new build's host took over \(new.running)")
        let both = try HostProcess(url: url, machine: "machine-both", mode: "strict", codeVersion: "v2", supporting: "v1,v2")
        let deadline = ContinuousClock.now + .milliseconds(Self.leaseMilliseconds) + .seconds(5)
        while Set(both.running) != Set(ids), ContinuousClock.now < deadline { ledger.read([new, both], for: .milliseconds(50)) }
        #expect(Set(both.running) == Set(ids), "the host that runs v1 took over \(both.running); \(ledger.story.suffix(10))")
        #expect(new.running.isEmpty, "the new build's host took over \(new.running)")
        for host in [new, both] { host.child.kill() }
        for host in [new, both] {
            for line in host.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: host) }
            _ = try host.child.waitForExit()
        }
        // Each kept the code version it started under.
        let store = WorkflowStore(backend: try PostgresStorage.open(configuration))
        #expect(try store.instances().allSatisfy { $0.codeVersion == "v1" })
        try store.close()
        try await Self.replayAndCheck(ids, acknowledged: ledger.acknowledged, configuration: configuration)
    }

    @Test(
        "three hosts, one killed with SIGKILL 20 times: its instances are taken over within the lease + 2 s, nothing acknowledged is lost or applied twice",
        arguments: ["strict", "grouped"]
    )
    func killedHosts(mode: String) async throws {
        let ids = (0..<9).map { "i\($0)" }
        let (configuration, url) = try await Self.storeOfReleasedInstances(ids)
        var hosts = try ["a", "b", "c"].map { try HostProcess(url: url, machine: "machine-\($0)", mode: mode) }
        var ledger = Ledger()
        ledger.read(hosts, for: .seconds(2))
        #expect(Set(hosts.flatMap(\.running)) == Set(ids), "every instance runs somewhere: \(hosts.map(\.running))")
        var slowest: Duration = .zero
        for kill in 0..<TestLoad.scaled(20) {
            ledger.read(hosts, for: .milliseconds(Int.random(in: 200...600)))
            let victim = Int.random(in: 0..<hosts.count)
            let orphans = hosts[victim].running
            let killed = MachineClock.now
            hosts[victim].child.kill()
            for line in hosts[victim].child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: hosts[victim]) }
            #expect(try hosts[victim].child.waitForExit() == 128 + SIGKILL)
            // Half the time the host comes back on the same machine, half on a new one.
            let machine = kill % 2 == 0 ? hosts[victim].machine : "machine-\(kill)"
            hosts[victim] = try HostProcess(url: url, machine: machine, mode: mode)
            // Every orphan is resumed by some host within the lease time plus 2 s, as the hosts'
            // own clock readings say; their lines are awaited longer, so that a test process slow
            // to read them is not taken for a slow takeover.
            let limit = Duration.milliseconds(Self.leaseMilliseconds) + .seconds(2)
            while MachineClock.duration(from: killed, to: MachineClock.now) < limit + .seconds(5),
                  !orphans.allSatisfy({ id in ledger.resumed[id].map { $0 > killed } ?? false }) {
                ledger.read(hosts, for: .milliseconds(50))
            }
            for id in orphans {
                guard let resumed = ledger.resumed[id], resumed > killed else {
                    // What the hosts said about it, and every listing or resume that failed.
                    let story = ledger.story.filter { $0.contains(" \(id) ") || $0.hasSuffix(" \(id)") || $0.contains("skip") || $0.contains("warning") || $0.contains("stalled") || $0.hasSuffix("host ready") }
                    Issue.record("""
                        kill \(kill): \(id) was not taken over; hosts \(hosts.map(\.machine)), the story:
                        \(story.suffix(30).joined(separator: "\n"))
                        the hosts' output: \(hosts.map { "\($0.machine): \($0.lines) lines, the last \(ContinuousClock.now - $0.lastRead) ago: \($0.last); \($0.child.diagnosis)" })
                        the store now: \(Self.ownershipDump(id, schema: configuration.schema))
                        """)
                    continue
                }
                slowest = max(slowest, MachineClock.duration(from: killed, to: resumed))
            }
        }
        #expect(slowest <= .milliseconds(Self.leaseMilliseconds) + .seconds(2), "slowest takeover \(slowest)")
        for host in hosts { host.child.kill() }
        for host in hosts {
            for line in host.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: host) }
            _ = try host.child.waitForExit()
        }
        #expect(ledger.acknowledged.count == ids.count, "every instance acknowledged actions: \(ledger.acknowledged)")

        // This process takes every instance over once the hosts' leases ran out.
        try await Self.replayAndCheck(ids, acknowledged: ledger.acknowledged, configuration: configuration, verify: true)
        print("takeover after SIGKILL, slowest of \(TestLoad.scaled(20)) kills (\(mode)): \(slowest)")
    }

    @Test(
        "a host whose connections are cut (pg_terminate_backend) again and again: failed commits stop their instances, which it takes back; nothing acknowledged is lost or applied twice",
        arguments: ["strict", "grouped"]
    )
    func cutConnections(mode: String) async throws {
        let ids = (0..<3).map { "k\($0)" }
        let (configuration, url) = try await Self.storeOfReleasedInstances(ids)
        let host = try HostProcess(url: url, machine: "machine-cut", mode: mode)
        var ledger = Ledger()
        ledger.read([host], for: .seconds(1))
        for _ in 0..<TestLoad.scaled(8) {
            ledger.story.append("\((ContinuousClock.now - ledger.started).formatted(.units(allowed: [.milliseconds]))) cut")
            try PostgresBackendTests.sql(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND datname = \(configuration.database.debugDescription.replacingOccurrences(of: "\"", with: "'"))
                """)
            ledger.read([host], for: .milliseconds(400))
        }
        let before = ledger.acknowledged
        ledger.read([host], for: .seconds(2))
        for id in ids {
            #expect((ledger.acknowledged[id] ?? 0) > (before[id] ?? 0), "\(id) goes on after the cuts: \(before[id] ?? 0) then \(ledger.acknowledged[id] ?? 0)")
        }
        if ids.contains(where: { (ledger.acknowledged[$0] ?? 0) <= (before[$0] ?? 0) }) {
            Issue.record(Comment(rawValue: "what the host printed:\n" + ledger.story.joined(separator: "\n")))
        }
        host.child.kill()
        for line in host.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: host) }
        _ = try host.child.waitForExit()
        try await Self.replayAndCheck(ids, acknowledged: ledger.acknowledged, configuration: configuration)
    }

    @Test("signals posted from another process reach instances across host kills: every version applied exactly once")
    func signalsAcrossKilledHosts() async throws {
        let configuration = PostgresBackendTests.fresh()
        let url = "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)?schema=\(configuration.schema)"
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let center = try SignalCenter.open(store: store, processIdentity: "poster")
        defer { try? center.stop() }
        let signals = (0..<4).map { _ in SignalID() }
        for (index, signal) in signals.enumerated() {
            // Started once here, so that its durable consumer exists before anything is posted.
            let host = try store.start(SignalTally(signal: signal), id: "t\(index)", configuration: SignalTally.configuration(center: center))
            await host.stopAndWait()
        }
        var hosts = try ["a", "b", "c"].map { machine in
            try ChildProcess(["pg-signal-host", url, "machine-\(machine)", "\(Self.leaseMilliseconds)"], mergeStandardError: true)
        }
        var latest: [String: (count: Int, sum: Int)] = [:]
        // What every host printed, and when: the story a failure tells.
        let started = ContinuousClock.now
        var timeline: [String] = []
        var broken = false
        func note(_ event: String) { timeline.append("\((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds]))) \(event)") }
        func read(for duration: Duration) {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline {
                for (index, host) in hosts.enumerated() {
                    while let line = host.readLine(timeout: .milliseconds(2)) {
                        note("host \(index): \(line)")
                        let fields = line.split(separator: " ").map(String.init)
                        guard ["state", "got"].contains(fields.first), fields.count == 4, let count = Int(fields[2]), let sum = Int(fields[3]) else {
                            if !["host", "lost", "skip"].contains(fields.first) { Issue.record("host: \(line)") }
                            continue
                        }
                        // Versions 1...count applied once each add up to 1+...+count.
                        if sum != count * (count + 1) / 2 { broken = true }
                        #expect(sum == count * (count + 1) / 2, "\(line)")
                        #expect(count >= latest[fields[1]]?.count ?? 0, "\(fields[1]) went back: \(line)")
                        latest[fields[1]] = (count, sum)
                    }
                }
            }
        }
        let versions = 30
        for version in 1...versions {
            for signal in signals { _ = try center.post(signal, value: version, terminatesConsumersAfterDelivery: false) }
            note("posted \(version)")
            read(for: .milliseconds(40))
            if version % 6 == 0 {
                let victim = Int.random(in: 0..<hosts.count)
                note("killing host \(victim)")
                hosts[victim].kill()
                _ = hosts[victim].readRemainingLines(timeout: .seconds(5))
                _ = try hosts[victim].waitForExit()
                hosts[victim] = try ChildProcess(
                    ["pg-signal-host", url, "machine-\(version)", "\(Self.leaseMilliseconds)"], mergeStandardError: true)
            }
        }
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, (0..<4).contains(where: { latest["t\($0)"]?.count != versions }) { read(for: .milliseconds(100)) }
        for index in 0..<4 { #expect(latest["t\(index)"]?.count == versions, "t\(index): \(String(describing: latest["t\(index)"]))") }
        for host in hosts {
            host.kill()
            _ = host.readRemainingLines(timeout: .seconds(5))
            _ = try host.waitForExit()
        }
        // What the logs hold, replayed here: each version once.
        try await Task.sleep(for: .milliseconds(Self.leaseMilliseconds + 300))
        for index in 0..<4 {
            let host = try store.resume(id: "t\(index)", as: SignalTally.self, configuration: SignalTally.configuration(center: center))
            let values = try store.entries(of: "t\(index)").filter { !$0.isProps }.map { BinaryPayloadCodec.jsonText($0.payload) ?? "?" }
            if host.rendering != .init(count: versions, sum: versions * (versions + 1) / 2) { broken = true }
            #expect(host.rendering == .init(count: versions, sum: versions * (versions + 1) / 2), "t\(index) applied \(values)")
            await host.stopAndWait()
        }
        if broken { Issue.record(Comment(rawValue: "what the hosts printed:\n" + timeline.joined(separator: "\n"))) }
    }

    @Test("a new run cleans up the run-scoped consumers its machine's dead runs left, never another machine's (whose processes it cannot see)")
    func runConsumersOfOtherMachines() throws {
        let configuration = PostgresBackendTests.fresh()
        // A pid that is not alive here: a run of this identity that crashed, as far as this machine can tell.
        let deadPID: Int32 = 0x7FFF_FFF0
        func consumer(_ name: String) -> ConsumerRecord {
            ConsumerRecord(id: UUID(), signal: UUID(), owner: name, runID: "run-\(name)", processIdentity: "orders", processID: deadPID,
                           processStartTime: 1, behaviour: .untilTerminated, coalescing: .everyVersion, scope: .run, lastDelivered: 0, created: 1)
        }
        var elsewhere = configuration
        elsewhere.machine = "machine-elsewhere"
        let other = consumer("other-machine"), local = consumer("this-machine")
        #expect(try PostgresStorage.open(elsewhere).signalStorage().register(other, at: 1))
        let storage = try PostgresStorage.open(configuration)
        #expect(try storage.signalStorage().register(local, at: 1))
        let center = try SignalCenter.open(store: WorkflowStore(backend: storage), processIdentity: "orders")
        defer { try? center.stop() }
        let remaining = try storage.signalStorage().consumers().map(\.owner)
        #expect(remaining == ["other-machine"], "\(remaining)")
    }

    @Test("a host stalled past its lease loses its instance to another host, writes nothing after the takeover, and stops it")
    func stalledHostIsFenced() async throws {
        let (configuration, url) = try await Self.storeOfReleasedInstances(["s"])
        let stalled = try HostProcess(url: url, machine: "machine-stalled", mode: "strict")
        var ledger = Ledger()
        ledger.read([stalled], for: .seconds(1))
        #expect(stalled.running == ["s"])
        kill(stalled.child.pid, SIGSTOP)
        try await Task.sleep(for: .milliseconds(Self.leaseMilliseconds + 500))
        let taker = try HostProcess(url: url, machine: "machine-taker", mode: "strict")
        ledger.read([taker], for: .seconds(1))
        #expect(taker.running == ["s"], "the other host took the instance over")
        kill(stalled.child.pid, SIGCONT)
        ledger.read([stalled, taker], for: .seconds(2))
        #expect(!stalled.running.contains("s"), "the stalled host said it lost the instance")
        for host in [stalled, taker] {
            host.child.kill()
            for line in host.child.readRemainingLines(timeout: .seconds(5)) { ledger.note(line, from: host) }
            _ = try host.child.waitForExit()
        }
        // One history: dense, each action applied once, every acknowledgement in it.
        try await Self.replayAndCheck(["s"], acknowledged: ledger.acknowledged, configuration: configuration)
    }
}
#endif
