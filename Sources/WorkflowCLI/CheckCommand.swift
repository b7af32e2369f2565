import ArgumentParser
import DurableWorkflow
import Foundation
import WorkflowLMDB

/// `wfctl check STORE`
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the whole store and report damage (corrupt or missing entries, unreadable pages or snapshots).",
        discussion: """
        Read-only and safe against a running service. The walk runs in a child process, so a damaged
        page that makes LMDB itself stop the process is reported (with what was being read) instead
        of ending this command. Exits 0 when nothing is damaged, 1 when something is, 3 when the store
        cannot be opened.
        Example: wfctl check /var/lib/service/workflows
        """)

    @OptionGroup var options: ReadOptions

    struct Report: Codable {
        let store: String
        let intact: Bool
        let instances: Int
        let entries: UInt64
        let snapshots: Int
        let damage: [StoreDamage]
    }

    func run() throws {
        let walk = try CheckWalk.inChildProcess(store: options.store)
        let report = Report(store: options.store, intact: walk.isIntact, instances: walk.instances, entries: walk.entries,
                            snapshots: walk.snapshots, damage: walk.damage)
        if options.json {
            emit(try json(report))
        } else {
            emit("\(options.store): \(walk.instances) instance(s), \(walk.entries) log entries and \(walk.snapshots) snapshot(s) read")
            if !walk.damage.isEmpty {
                var table = Table("AREA", "INSTANCE", "SEQUENCE", "DAMAGE")
                for found in walk.damage {
                    table.add(found.area, found.instance ?? "-", found.sequence.map { "\($0)" } ?? "-", found.detail)
                }
                emit(table.text)
            }
        }
        if !walk.isIntact { throw ToolError.finding("\(walk.damage.count) damaged place(s) in \(options.store)") }
    }
}

/// `wfctl check-walk STORE`: the child process of ``Check`` (not listed in help). Prints one
/// line per step (`step …`), then `report <JSON>`.
struct CheckWalk: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check-walk", shouldDisplay: false)

    @Argument var store: String

    func run() throws {
        let report: StoreCheckReport
        do {
            let opened = try openStore(store, readOnly: true)
            report = try opened.check { step in say("step \(step)") }
        } catch let error as DurableError where error.storageFailure?.kind == .corrupted {
            // A damaged file (truncated, say) is a finding, not a failure to check.
            report = StoreCheckReport(instances: 0, entries: 0, snapshots: 0, damage: [
                StoreDamage(area: "file", instance: nil, sequence: nil, detail: error.storageFailure?.detail ?? error.detail)
            ])
        }
        say("report " + (try json(report, pretty: false)))
    }

    /// Writes a line to stdout at once (the parent must see the last step if this process dies).
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Runs the walk in a child process of this executable and returns its report; a child that
    /// died of a signal is reported as damage found while reading its last step.
    static func inChildProcess(store: String) throws -> StoreCheckReport {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["check-walk", store]
        // The walk may end by a signal: no crash report is wanted from it, and Swift's backtracer
        // would run as a process of its own that holds the output pipes open (under a sanitizer
        // it did not end at all), so this command would never see the walk's end.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        child.environment = environment
        let output = Pipe(), errors = Pipe()
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        let lines = text.split(separator: "\n").map(String.init)
        if child.terminationReason == .uncaughtSignal {
            let step = lines.last { $0.hasPrefix("step ") }.map { String($0.dropFirst(5)) } ?? "opening the store"
            return StoreCheckReport(instances: 0, entries: 0, snapshots: 0, damage: [StoreDamage(
                area: "pages", instance: nil, sequence: nil,
                detail: "reading stopped the process (signal \(child.terminationStatus)) while \(step): a page is damaged")])
        }
        guard child.terminationStatus == 0, let last = lines.last(where: { $0.hasPrefix("report ") }) else {
            let message = errorText.split(separator: "\n").last.map(String.init) ?? "the check stopped (exit \(child.terminationStatus))"
            throw ToolError(code: child.terminationStatus == 0 ? 3 : child.terminationStatus,
                            message: message.hasPrefix("wfctl: ") ? String(message.dropFirst(7)) : message)
        }
        return try JSONDecoder().decode(StoreCheckReport.self, from: Data(last.dropFirst(7).utf8))
    }
}
