// showcase: the README's first command. A service runs durable upload jobs (child workflows with
// workers, a durable timer, a wait for a signal); it is killed with SIGKILL in the middle; another
// process posts the "upload finished" signals; the service restarts, replays, resumes every job,
// receives each signal exactly once and finishes; the timers fire at their original deadlines;
// then wfctl looks inside the store. Exits 0 only if every job finished as expected.
//
//   showcase [STORE]           run the whole story (in a fresh temporary store by default)
//   showcase service STORE     (internal) the service process
//   showcase post STORE        (internal) the process that posts the signals
import DurableWorkflow
import WorkflowLMDB
import Foundation
import Synchronization
import Workflow
import WorkflowExamples
import WorkflowLocks
import WorkflowSignals

/// The jobs of the story: files with their upload times (ms), finishing no earlier than 6 s in.
let jobs: [String: [String: Int]] = [
    "job-1": ["report.pdf": 500, "data.csv": 1500],
    "job-2": ["photo.jpg": 800],
    "job-3": ["video.mp4": 3000, "subtitles.srt": 400],
]
let holdSeconds = 6

func signal(for job: String) -> SignalID { SignalID(stableName: "upload finished: \(job)") }

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func fail(_ message: String) -> Never {
    say("FAILED: \(message)")
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "service": runService(store: arguments[1])
case "post": runPoster(store: arguments[1])
default: runStory(store: arguments.first)
}

// MARK: - The service

func runService(store path: String) -> Never {
    do {
        let center = try SignalCenter.open(path: path, processIdentity: "showcase-service")
        let store = center.store
        let configuration = UploadJob.configuration(center: center)
        UploadLog.onUploadStarted { file, key in say("uploading \(file) (idempotency key \(key))") }
        var hosts: [String: WorkflowHost<UploadJob>] = [:]
        var reported: [String: UploadJob.State] = [:]
        for (job, files) in jobs.sorted(by: { $0.key < $1.key }) {
            let existing = try store.instance(id: job)
            if existing?.status == .completed { continue }
            // What a resumed job had done is what its log says, read before its host starts: a
            // started host may apply a signal posted meanwhile before its rendering is read here,
            // and that delivery must still be told below.
            let replayed = try existing.map { _ in try store.state(of: job, as: UploadJob.self, configuration: configuration).rootState(as: UploadJob.State.self) }
            // Started with its first action in one commit, or resumed by replay.
            let host = try store.startOrResume(
                UploadJob(job: job, files: files, confirmation: signal(for: job), holdSeconds: holdSeconds), id: job,
                with: UploadJob.Begin(), configuration: configuration)
            hosts[job] = host
            if let existing, let replayed {
                reported[job] = replayed
                let done = replayed.uploaded
                say("\(job): resumed by replaying \(existing.lastSequence) log entries"
                    + (done.isEmpty ? "" : " (already uploaded: \(done.joined(separator: ", ")))"))
            } else {
                say("\(job): started, \(files.count) file(s) to upload, finishing no earlier than \(holdSeconds) s from now")
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            for (job, host) in hosts.sorted(by: { $0.key < $1.key }) {
                let state = host.rendering.state
                let previous = reported[job] ?? UploadJob.State()
                for file in state.uploaded where !previous.uploaded.contains(file) { say("\(job): uploaded \(file)") }
                if state.uploaded.count == jobs[job]!.count && previous.uploaded.count != state.uploaded.count && state.confirmedBy == nil {
                    say("\(job): all files uploaded; waiting for the upload-finished signal")
                }
                if let by = state.confirmedBy, previous.confirmedBy == nil { say("\(job): signal received: \"\(by)\"") }
                if state.holdReleasedAt != nil, previous.holdReleasedAt == nil { say("\(job): hold timer fired") }
                if state.finished, !previous.finished {
                    // Completed by the commit of the action that finished it: nothing to mark.
                    say("\(job): finished")
                }
                reported[job] = state
            }
            if hosts.keys.allSatisfy({ reported[$0]?.finished == true }) {
                say("all jobs finished")
                exit(0)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        fail("the service timed out")
    } catch {
        fail("service: \(error)")
    }
}

// MARK: - The poster

func runPoster(store path: String) -> Never {
    do {
        let center = try SignalCenter.open(path: path, processIdentity: "showcase-scanner")
        for job in jobs.keys.sorted() {
            let version = try center.post(signal(for: job), value: "virus scan: clean", idempotencyKey: "scan \(job)")
            say("posted \"upload finished\" for \(job) (version \(version))")
        }
        try center.stop()
        exit(0)
    } catch {
        fail("poster: \(error)")
    }
}

// MARK: - The story

/// The lines a child printed, collected from its reading thread.
final class Lines: Sendable {
    private let storage = Lock<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var all: [String] { storage.withLock { $0 } }
}

/// A child process (this executable or wfctl) whose output lines are echoed with a prefix.
final class Child {
    let process = Process()
    let lines = Lines()

    init(_ executable: String, _ arguments: [String], prefix: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let handle = pipe.fileHandleForReading, lines = self.lines
        let reader = Thread {
            var buffer = Data()
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                buffer.append(data)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    say(prefix + line)
                    lines.append(line)
                }
            }
        }
        try process.run()
        reader.start()
    }

    func waitForLine(_ predicate: (String) -> Bool, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.all.contains(where: predicate) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.05)  // let the reader echo the last lines
        return process.terminationStatus
    }
}

func runStory(store given: String?) -> Never {
    let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let wfctl = (me as NSString).deletingLastPathComponent + "/wfctl"
    let store = given ?? NSTemporaryDirectory() + "showcase-\(UUID().uuidString.prefix(8))"
    say("""
    Showcase: durable upload jobs that survive kill -9, with signals crossing processes.
    Store: \(store)

    Three jobs upload files. Each file is a child workflow running a worker (a simulated upload).
    Each job then waits for an "upload finished" signal that another process (a virus scanner)
    posts, and finishes no earlier than \(holdSeconds) s after it began (a durable timer).

    """)
    do {
        say("Step 1. Start the service.")
        let service = try Child(me, ["service", store], prefix: "  service  | ")
        guard service.waitForLine({ $0 == "job-1: uploaded report.pdf" }, timeout: .seconds(20)) else { fail("no upload finished in time") }
        Thread.sleep(forTimeInterval: 0.3)

        say("\nStep 2. Kill the service with SIGKILL in the middle of its uploads.")
        service.kill()
        say("  (killed: every action it had applied is in the log; anything it had not committed never left it)")
        _ = try Child(wfctl, ["list", store], prefix: "  wfctl    | ").wait()

        say("\nStep 3. Another process posts the \"upload finished\" signals to the same store.")
        guard try Child(me, ["post", store], prefix: "  scanner  | ").wait() == 0 else { fail("the poster failed") }

        say("\nStep 4. Restart the service: it replays each job's log, resumes its uploads with the same")
        say("idempotency keys, receives each signal exactly once, and the hold timers fire at their")
        say("original deadlines.")
        let restarted = try Child(me, ["service", store], prefix: "  service  | ")
        guard restarted.wait() == 0 else { fail("the restarted service did not finish every job") }

        say("\nStep 5. Look inside the store with wfctl.")
        for command in [["list", store], ["log", store, "job-1"], ["state", store, "job-1", "--at", "3"], ["verify", store]] {
            say("\n  $ wfctl \(command.joined(separator: " "))")
            guard try Child(wfctl, command, prefix: "    ").wait() == 0 else { fail("wfctl \(command[0]) failed") }
        }
        try checkOutcome(store: store)
        say("\nShowcase passed: every job finished with the expected state, each signal was applied exactly")
        say("once, and each hold timer fired at its original deadline.")
        say("\nSee the store in the browser (timelines, time travel with a diff, signals; Ctrl-C stops it):")
        say("  \(displayed(wfctl)) serve \(store)")
        say("then open http://127.0.0.1:8642/")
        exit(0)
    } catch {
        fail("\(error)")
    }
}

/// `path` relative to the current directory when it lies under it (`.build/debug/wfctl`).
func displayed(_ path: String) -> String {
    let here = FileManager.default.currentDirectoryPath + "/"
    return path.hasPrefix(here) ? String(path.dropFirst(here.count)) : path
}

/// Every job completed, uploaded all its files, was confirmed once, and its timer fired at its deadline.
func checkOutcome(store path: String) throws {
    let store = try WorkflowStore.open(path: path, configuration: .readOnly)
    for (job, files) in jobs.sorted(by: { $0.key < $1.key }) {
        guard let instance = try store.instance(id: job), instance.status == .completed else { fail("\(job) did not complete") }
        let entries = try store.entries(of: job)
        let signals = entries.filter { $0.origin == .signal }, timers = entries.filter { $0.origin == .timer }
        guard signals.count == 1 else { fail("\(job) applied \(signals.count) signal deliveries, not 1") }
        guard timers.count == 1 else { fail("\(job) fired its timer \(timers.count) times, not 1") }
        let began = entries.first { $0.actionTag == UploadJob.Begin.tag }!.time
        let deadline = began + .seconds(holdSeconds)
        let fired = timers[0].time
        guard fired >= deadline, fired.duration(since: deadline) < .seconds(2) else {
            fail("\(job)'s timer fired at \(fired), its deadline was \(deadline)")
        }
        let uploads = entries.filter { $0.origin == .worker }.count
        guard uploads == files.count else { fail("\(job) logged \(uploads) finished uploads for \(files.count) files") }
        say("  check: \(job) completed; \(files.count) upload(s); 1 signal; timer fired \(Int(fired.duration(since: deadline) / .milliseconds(1))) ms after its deadline")
    }
}
