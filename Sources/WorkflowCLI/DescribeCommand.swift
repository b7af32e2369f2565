import ArgumentParser
import DurableWorkflow
import Workflow

/// `wfctl describe STORE ID`
struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An instance's status and what it waits for: timers with deadlines, awaited signals, tasks and workers with their idempotency keys.",
        discussion: """
        The waits come from the tree rebuilt by replay (read-only: no worker runs), so they need the instance's
        workflow type registered in this tool; without it, only the record is shown. An instance whose replay
        fails is described all the same, with why, and the command exits 1 (a finding).
        Example: wfctl describe /var/lib/service/workflows order-42
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "The instance id.")
    var id: String

    func run() throws {
        let store = try options.open()
        // An instance whose replay fails is described all the same (its record, its requests),
        // with why its waits are unknown, and the command ends with that finding.
        let report = try Reports.describe(store, id: id, types: WorkflowTool.types, despiteReplayFailure: true)
        if options.json {
            emit(try json(report))
        } else {
            show(report)
        }
        if let failure = report.waitsError { throw ToolError.finding("\(id) does not replay: \(failure)") }
    }

    /// The record, the control requests and the waits, as tables.
    private func show(_ report: Reports.Description) {
        let instance = report.instance, control = report.control, requests = report.requests
        let waits = report.waitsKnown ? report.waits : nil
        var record = Table("FIELD", "VALUE")
        record.add("id", instance.id)
        record.add("type", instance.workflowType)
        record.add("status", instance.status.rawValue)
        record.add("code version", instance.codeVersion ?? "-")
        if let failure = instance.failure { record.add("failed with", failure) }
        record.add("last sequence", "\(instance.lastSequence)")
        record.add("snapshot", instance.lastSnapshot == 0 ? "-" : "\(instance.lastSnapshot)")
        record.add("created", iso(instance.created))
        record.add("updated", iso(instance.updated))
        if control.paused { record.add("paused", "yes: no action is applied and no timer fires until `wfctl unpause`") }
        if let cancellation = control.cancellation {
            let deadline = cancellation.deadline.map { ", ended at \(iso($0)) if still running" } ?? ""
            record.add("cancelling", "since \(iso(cancellation.requestedAt))\(deadline)" + (cancellation.reason.map { ": \($0)" } ?? ""))
        }
        emit(record.text)
        if !requests.isEmpty {
            var table = Table("REQUEST", "VERB", "REQUESTED", "BY", "OUTCOME", "ENTRY", "DETAIL")
            for request in requests {
                table.add("\(request.number)", request.verb, request.requested, request.requestedBy, request.outcome ?? "pending",
                          request.sequence.map { "\($0)" } ?? "-", request.detail ?? request.reason ?? "")
            }
            emit("\ncontrol requests:\n" + table.text)
        }
        if let failure = report.waitsError {
            return emit("\nwaits: unknown: replaying the instance fails: \(failure)")
        }
        guard let waits else {
            return emit("\nwaits: unknown (register \(instance.workflowType) in this tool to see them)")
        }
        emit("")
        if waits.isEmpty { return emit("waits: nothing") }
        var table = Table("NODE", "KIND", "KEY", "DETAIL", "IDEMPOTENCY KEY")
        for wait in waits {
            let detail = [wait.due.map { "due \($0)" }, wait.signal.map { "signal \($0)" }, wait.attempt.map { "attempt \($0)" },
                          wait.workerType].compactMap { $0 }.joined(separator: ", ")
            table.add(wait.node, wait.kind, wait.key, detail.isEmpty ? "-" : detail, wait.idempotencyKey)
        }
        emit(table.text)
    }
}
