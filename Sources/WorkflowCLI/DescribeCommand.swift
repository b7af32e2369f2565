import ArgumentParser
import DurableWorkflow
import Workflow

/// `wfctl describe STORE ID`
struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An instance's status and what it waits for: timers with deadlines, awaited signals, tasks and workers with their idempotency keys.",
        discussion: """
        The waits come from the tree rebuilt by replay (read-only: no worker runs), so they need the instance's
        workflow type registered in this tool; without it, only the record is shown.
        Example: wfctl describe /var/lib/service/workflows order-42
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "The instance id.")
    var id: String

    /// The JSON shape of `describe` (documented in docs/wfctl-json.md).
    struct Report: Codable {
        struct Wait: Codable {
            let node: String
            let key: String
            /// timer, signal, task or worker.
            let kind: String
            /// The timer's deadline, or when a task's next attempt is due (ISO 8601).
            let due: String?
            /// The awaited signal's id.
            let signal: String?
            /// A task's next attempt.
            let attempt: Int?
            /// A plain worker's type.
            let workerType: String?
            let idempotencyKey: String
        }
        /// A control request (rule O2) the store keeps for the instance.
        struct Request: Codable {
            let number: UInt64
            let verb: String
            let reason: String?
            let requestedBy: String
            let requested: String
            /// applied, unchanged, refused; `nil` while pending.
            let outcome: String?
            let sequence: UInt64?
            let detail: String?
            let answeredBy: String?
        }
        let instance: InstanceInfo
        /// Whether the waits are known (the type is registered in this tool).
        let waitsKnown: Bool
        let waits: [Wait]
        /// What control requests did to it, as its log says.
        let control: InstanceControlState
        /// Its control requests, oldest first (the last 20).
        let requests: [Request]
    }

    func run() throws {
        let store = try options.open()
        guard let instance = try store.instance(id: id) else {
            throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
        }
        let support = WorkflowTool.types.support(for: instance.workflowType)
        let waits = try support.map { try $0.state(store, id, nil, true).waits.map(Self.wait) }
        let control = try store.controlState(of: id)
        let requests = try store.controlRequests(of: id).suffix(20).map { stored in
            Report.Request(
                number: stored.number, verb: stored.request.verb.rawValue, reason: stored.request.reason, requestedBy: stored.request.requestedBy,
                requested: iso(WallTime(nanosecondsSinceEpoch: stored.request.requested)), outcome: stored.answer?.outcome.rawValue,
                sequence: stored.answer?.sequence, detail: stored.answer?.detail, answeredBy: stored.answer?.answeredBy)
        }
        if options.json {
            return emit(try json(Report(instance: instance, waitsKnown: waits != nil, waits: waits ?? [], control: control, requests: requests)))
        }
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

    static func wait(_ wait: StateTree.Wait) -> Report.Wait {
        let node = wait.path.description, key = wait.key, idempotencyKey = wait.idempotencyKey
        switch wait.kind {
        case .timer(let deadline):
            return .init(node: node, key: key, kind: "timer", due: iso(deadline), signal: nil, attempt: nil, workerType: nil,
                         idempotencyKey: idempotencyKey)
        case .signal(let signal):
            return .init(node: node, key: key, kind: "signal", due: nil, signal: signal, attempt: nil, workerType: nil,
                         idempotencyKey: idempotencyKey)
        case .task(let attempt, let notBefore):
            return .init(node: node, key: key, kind: "task", due: notBefore.map(iso), signal: nil, attempt: attempt, workerType: nil,
                         idempotencyKey: idempotencyKey)
        case .worker(let type):
            return .init(node: node, key: key, kind: "worker", due: nil, signal: nil, attempt: nil, workerType: type,
                         idempotencyKey: idempotencyKey)
        }
    }
}
