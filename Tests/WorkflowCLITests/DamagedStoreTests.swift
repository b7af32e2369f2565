import DurableWorkflow
import Foundation
import LMDB
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowStorage

/// Issue 62, point 7: damage to a store's pages never kills the caller of a read command, and a
/// service never dies on a damaged store.
@Suite("A damaged store: read commands report it, never die of it; a service refuses it, typed", .serialized)
struct DamagedStoreTests {
    /// The read commands, each over `store` (instance `order-7` where one is named).
    static func readCommands(_ store: String) -> [[String]] {
        [["list", store], ["log", store, "order-7"], ["state", store, "order-7"], ["verify", store], ["describe", store, "order-7"],
         ["signals", store], ["export", store], ["info", store]]
    }

    /// A store of 300 orders, written by the order service (instances, logs, the journal,
    /// signals and their consumers): the shipments posted first, so every order finishes.
    static let base: TemporaryDirectory = {
        let dir = TemporaryDirectory("damage-base")
        for step in ["ship", "serve"] {
            let (code, lines) = try! ChildProcess.run(product: "order-service", [step, dir.path + "/store", "--orders", "300"])
            precondition(code == 0, "order-service \(step): \(lines.suffix(5))")
        }
        return dir
    }()

    /// A copy of the base store with 4 bytes at one offset replaced, both chosen by `seed`.
    static func damagedCopy(seed: UInt64, into directory: String) throws -> (page: Int, offset: Int) {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for file in ["data.mdb"] {
            try FileManager.default.copyItem(atPath: base.path + "/store/" + file, toPath: directory + "/" + file)
        }
        var random = SeededRandom(seed: seed)
        let size = try FileManager.default.attributesOfItem(atPath: directory + "/data.mdb")[.size] as! Int
        let page = 2 + Int(random.next() % UInt64(size / 4096 - 2))
        let offset = page * 4096 + Int(random.next() % 4092)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: directory + "/data.mdb"))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: (0..<4).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        try handle.close()
        return (page, offset)
    }

    /// Runs `arguments` with the built wfctl: its exit code (128 + the signal when one ended it),
    /// its standard error and output together.
    static func wfctl(_ arguments: [String]) throws -> (code: Int32, text: String) {
        let child = try ChildProcess(arguments, executable: ChildProcess.builtProduct("wfctl"), mergeStandardError: true)
        let lines = child.readRemainingLines()
        return (try child.waitForExit(), lines.joined(separator: "\n"))
    }

    @Test("single flips at seeded offsets: every read command on every damaged copy ends with an exit code, none by a signal")
    func seededFlips() throws {
        // 24 here (a tenth under a sanitizer, where each wfctl is ten times as slow); 200 with
        // WORKFLOW_TEST_DAMAGE_SEEDS=200, as the README's figure was measured.
        let seeds = UInt64(ProcessInfo.processInfo.environment["WORKFLOW_TEST_DAMAGE_SEEDS"] ?? "") ?? UInt64(TestLoad.isLight ? 3 : 24)
        let scratch = TemporaryDirectory("damage-seeded")
        var deaths: [String] = [], runs = 0, reported = 0
        for seed in 0..<seeds {
            let store = scratch.path + "/s"
            let (page, offset) = try Self.damagedCopy(seed: seed, into: store)
            for command in Self.readCommands(store) {
                let (code, text) = try Self.wfctl(command)
                runs += 1
                if code >= 128 { deaths.append("seed \(seed) (page \(page), offset \(offset)): wfctl \(command[0]) ended by signal \(code - 128): \(text.suffix(300))") }
                if text.contains("stopped the process that read it") { reported += 1 }
            }
        }
        #expect(deaths.isEmpty, "\(deaths.count) of \(runs) runs died: \(deaths.joined(separator: "\n"))")
        print("damage: \(runs) read commands over \(seeds) damaged copies, \(reported) of them reported a crash of their reader as damage")
    }

    @Test("damage that stops any process reading it: the walk finds it first, wfctl reports it (exit 1), the open with a walk and the service refuse it, typed")
    func crashingDamage() throws {
        let scratch = TemporaryDirectory("damage-crashing")
        let store = scratch.path + "/s"
        // Seeded flips until one stops the walk's child (about one in twenty does) and also stops
        // a reader of wfctl's (where this library's own bound checks do not catch it first), away
        // from the meta and main databases and the free list, which the store's open reads (a
        // service opens its store before its walk: `walkPagesFirst` is what covers those).
        var found: (seed: UInt64, outcome: StoreWalk.Outcome)?
        for seed in UInt64(1_000)..<3_000 {
            _ = try Self.damagedCopy(seed: seed, into: store)
            let outcome = StoreWalk.inChildProcess(path: store)
            guard case .stopped(_, let reading) = outcome, !["(main)", "meta", "(free pages)"].contains(where: reading.contains) else { continue }
            if try Self.wfctl(["verify", store]).text.contains("stopped the process that read it") {
                found = (seed, outcome)
                break
            }
        }
        let (seed, outcome) = try #require(found, "no seeded flip stopped both the walk and a reader")
        #expect(outcome.summary.contains("stopped the process that read it"))

        // wfctl: no command dies; those that read the damaged page report it as a finding.
        var findings = 0
        for command in Self.readCommands(store) {
            let (code, text) = try Self.wfctl(command)
            #expect(code < 128, "seed \(seed): wfctl \(command[0]) ended by signal \(code - 128)")
            if text.contains("stopped the process that read it") {
                findings += 1
                #expect(code == 1, "\(text)")
                #expect(text.contains("wfctl check finds"), "\(text)")
            }
        }
        #expect(findings >= 1, "seed \(seed): no read command met the damaged page: \(outcome.summary)")

        // The library: an open with the walk first is a typed .corrupted failure, in this process.
        #expect {
            _ = try WorkflowStore.open(path: store, configuration: StoreConfiguration(walkPagesFirst: .always))
        } throws: { error in
            guard let error = error as? DurableError, error.kind == .storage, let failure = error.storageFailure else { return false }
            return failure.kind == .corrupted && failure.detail.contains("stopped the process that read it")
        }

        // A service on it (a process of its own) refuses to start, and says why.
        let service = try ChildProcess(["service-run-once", store], mergeStandardError: true)
        let lines = service.readRemainingLines()
        let code = try service.waitForExit()
        let text = lines.joined(separator: "\n")
        #expect(code < 128, "the service died by signal \(code - 128): \(text.suffix(500))")
        #expect(text.contains("the service does not start") && text.contains("failed: ") && text.contains("stopped the process that read it"),
                "\(text.suffix(800))")
        #expect(!text.contains("running"))
    }

    @Test("an intact store is walked once per build: due when never walked, not after a walk, due again when its data file is replaced")
    func walkRecord() throws {
        let scratch = TemporaryDirectory("damage-record")
        let store = scratch.path + "/s"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.base.path + "/store/data.mdb", toPath: store + "/data.mdb")
        // Copied in: never walked by this build.
        var opened = try WorkflowStore.open(path: store)
        guard case .intact(let entries) = opened.walkPages(.whenUnchecked) else { Issue.record("no walk of a copied store"); return }
        #expect(entries > 300)
        guard case .notNeeded = opened.walkPages(.whenUnchecked) else { Issue.record("walked again"); return }
        try opened.close()
        opened = try WorkflowStore.open(path: store)
        guard case .notNeeded = opened.walkPages(.whenUnchecked) else { Issue.record("walked again after a reopen"); return }
        guard case .intact = opened.walkPages(.always) else { Issue.record("no walk with .always"); return }
        try opened.close()
        // The data file replaced (a restore from a copy): due again.
        let data = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
        try FileManager.default.removeItem(atPath: store + "/data.mdb")
        try FileManager.default.removeItem(atPath: store + "/lock.mdb")
        try data.write(to: URL(fileURLWithPath: store + "/data.mdb"))
        opened = try WorkflowStore.open(path: store)
        guard case .intact = opened.walkPages(.whenUnchecked) else { Issue.record("no walk after the data file was replaced"); return }
        try opened.close()
    }
}

/// SplitMix64: the same numbers for the same seed, on every machine.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
