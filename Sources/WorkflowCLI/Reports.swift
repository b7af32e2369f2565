import DurableWorkflow
import Foundation
import Workflow
import WorkflowSignals

/// The records `wfctl --json` prints (documented in docs/wfctl-json.md), made in one place: the
/// commands print them, and the console (`WorkflowConsole`, `wfctl serve`) serves the same shapes.
package enum Reports {
    // MARK: log

    /// An entry of `log`.
    package struct LogLine: Codable, Sendable {
        package let sequence: UInt64
        package let time: String
        package let origin: String
        package let node: String
        package let action: String
        package let version: Int
        package let payload: JSONValue?
        package let payloadBase64: String
        package let digest: String?
    }

    package static func logLine(_ entry: LogEntry) -> LogLine {
        LogLine(
            sequence: entry.sequence, time: iso(entry.time), origin: entry.origin.rawValue, node: entry.nodePath.description,
            action: entry.actionTag, version: entry.actionVersion, payload: payload(of: entry),
            payloadBase64: Data(entry.payload).base64EncodedString(), digest: entry.digest.map { String($0, radix: 16) })
    }

    /// An entry's payload as JSON: a control entry's fields (its payload is the engine's own
    /// binary form), else the payload itself when it is JSON or the binary codec's.
    package static func payload(of entry: LogEntry) -> JSONValue? {
        if entry.isControl, let control = ControlEntry(entry) {
            return .object(control.fields.mapValues { value in Int64(value).map(JSONValue.integer) ?? .string(value) })
        }
        return JSONValue.parse(entry.payload)
    }

    // MARK: describe

    /// `describe`: an instance, what it waits for, and what control requests did to it.
    package struct Description: Codable, Sendable {
        package struct Wait: Codable, Sendable {
            package let node: String
            package let key: String
            /// timer, signal, task or worker.
            package let kind: String
            /// The timer's deadline, or when a task's next attempt is due (ISO 8601).
            package let due: String?
            /// The awaited signal's id.
            package let signal: String?
            /// A task's next attempt.
            package let attempt: Int?
            /// A plain worker's type.
            package let workerType: String?
            package let idempotencyKey: String
        }
        /// A control request (rule O2) the store keeps for the instance.
        package struct Request: Codable, Sendable {
            package let number: UInt64
            package let verb: String
            package let reason: String?
            package let requestedBy: String
            package let requested: String
            /// applied, unchanged, refused; `nil` while pending.
            package let outcome: String?
            package let sequence: UInt64?
            package let detail: String?
            package let answeredBy: String?
        }
        package let instance: InstanceInfo
        /// Whether the waits are known (the type is registered in the tool).
        package let waitsKnown: Bool
        package let waits: [Wait]
        /// What control requests did to it, as its log says.
        package let control: InstanceControlState
        /// Its control requests, oldest first (the last 20).
        package let requests: [Request]
        /// Why the waits are unknown though the type is registered: its replay failed (only
        /// when asked to describe such an instance anyway).
        package var waitsError: String?
    }

    /// What `describe` says of instance `id`; its waits when `types` has its workflow type. A
    /// replay that fails throws, unless `despiteReplayFailure`: the waits are then unknown, and
    /// `waitsError` says why (the console shows such an instance's record and log all the same).
    package static func describe(_ store: WorkflowStore, id: String, types: WorkflowTypes, despiteReplayFailure: Bool = false) throws -> Description {
        let instance = try existing(store, id: id)
        let support = types.support(for: instance.workflowType)
        var waitsError: String?
        let waits: [Description.Wait]?
        do {
            waits = try support.map { try $0.state(store, id, nil, true).waits.map(wait) }
        } catch where despiteReplayFailure {
            waits = nil
            waitsError = "\(error)"
        }
        let requests = try store.controlRequests(of: id).suffix(20).map { stored in
            Description.Request(
                number: stored.number, verb: stored.request.verb.rawValue, reason: stored.request.reason, requestedBy: stored.request.requestedBy,
                requested: iso(WallTime(nanosecondsSinceEpoch: stored.request.requested)), outcome: stored.answer?.outcome.rawValue,
                sequence: stored.answer?.sequence, detail: stored.answer?.detail, answeredBy: stored.answer?.answeredBy)
        }
        return Description(instance: instance, waitsKnown: waits != nil, waits: waits ?? [], control: try store.controlState(of: id),
                           requests: requests, waitsError: waitsError)
    }

    package static func wait(_ wait: StateTree.Wait) -> Description.Wait {
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

    // MARK: state

    /// `state`: an instance's state tree at a sequence.
    package struct State: Codable, Sendable {
        package struct Node: Codable, Sendable {
            package let path: String
            package let state: JSONValue?
        }
        package let instance: String
        package let sequence: UInt64
        package let digest: String
        package let nodes: [Node]
    }

    /// Instance `id`'s state tree at `sequence` (default: the last), rebuilt by replay with its
    /// workflow type as `types` registers it.
    package static func state(
        _ store: WorkflowStore, id: String, at sequence: UInt64?, checkingDigests: Bool = true, types: WorkflowTypes
    ) throws -> State {
        state(id: id, tree: try registeredSupport(store: store, id: id, types: types).state(store, id, sequence, checkingDigests))
    }

    package static func state(id: String, tree: StateTree) -> State {
        State(instance: id, sequence: tree.sequence, digest: String(tree.digest, radix: 16),
              nodes: tree.nodes.map { .init(path: $0.path.description, state: JSONValue.parse($0.encodedState)) })
    }

    /// What changed in an instance's state tree from one sequence to another, field by field
    /// (`state --at A --diff B`, the console's time travel).
    package struct StateDiff: Codable, Sendable {
        package struct Change: Codable, Sendable, Equatable {
            /// The node's path in the tree.
            package let node: String
            /// Where in the node's state, as a JSON pointer (RFC 6901: `/items/0/name`); empty for
            /// the whole state (a node that appeared or went, or a state that is not JSON).
            package let field: String
            /// added, removed or changed.
            package let change: String
            package let before: JSONValue?
            package let after: JSONValue?
        }
        package let instance: String
        /// The sequence compared from (`--diff`) and the one compared to (`--at`).
        package let from: UInt64
        package let to: UInt64
        package let changes: [Change]
    }

    /// The changes from state `old` to state `new` of the same instance: nodes added and removed,
    /// and within the nodes both have, each field whose value differs (objects compared key by
    /// key, arrays index by index).
    package static func diff(from old: State, to new: State) -> StateDiff {
        let before = Dictionary(old.nodes.map { ($0.path, $0.state) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.nodes.map { ($0.path, $0.state) }, uniquingKeysWith: { first, _ in first })
        var changes: [StateDiff.Change] = []
        for node in new.nodes {
            guard let previous = before[node.path] else {
                changes.append(.init(node: node.path, field: "", change: "added", before: nil, after: node.state))
                continue
            }
            compare(previous ?? .null, node.state ?? .null, node: node.path, at: "", into: &changes)
        }
        for node in old.nodes where after[node.path] == nil {
            changes.append(.init(node: node.path, field: "", change: "removed", before: node.state, after: nil))
        }
        return StateDiff(instance: new.instance, from: old.sequence, to: new.sequence, changes: changes)
    }

    private static func compare(_ old: JSONValue, _ new: JSONValue, node: String, at pointer: String, into changes: inout [StateDiff.Change]) {
        if old == new { return }
        func escaped(_ key: String) -> String {
            key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
        }
        switch (old, new) {
        case (.object(let a), .object(let b)):
            for key in Set(a.keys).union(b.keys).sorted() {
                let field = pointer + "/" + escaped(key)
                switch (a[key], b[key]) {
                case (let x?, let y?): compare(x, y, node: node, at: field, into: &changes)
                case (nil, let y?): changes.append(.init(node: node, field: field, change: "added", before: nil, after: y))
                case (let x?, nil): changes.append(.init(node: node, field: field, change: "removed", before: x, after: nil))
                case (nil, nil): break
                }
            }
        case (.array(let a), .array(let b)):
            for index in 0..<max(a.count, b.count) {
                let field = pointer + "/\(index)"
                if index < a.count, index < b.count {
                    compare(a[index], b[index], node: node, at: field, into: &changes)
                } else if index < b.count {
                    changes.append(.init(node: node, field: field, change: "added", before: nil, after: b[index]))
                } else {
                    changes.append(.init(node: node, field: field, change: "removed", before: a[index], after: nil))
                }
            }
        default:
            changes.append(.init(node: node, field: pointer, change: "changed", before: old, after: new))
        }
    }

    // MARK: signals

    /// A signal record as `signals` prints it.
    package struct SignalRecord: Codable, Sendable {
        /// Its UUID, as text.
        package let id: String
        /// The stable name it was made from, when known.
        package let name: String?
        package let latestVersion: UInt64
        package let retainedVersions: [UInt64]
        package let consumers: Int
        package let created: String
        package let updated: String

        init(_ info: SignalInfo) {
            id = info.id.description
            name = info.name
            latestVersion = info.latestVersion
            retainedVersions = info.retainedVersions
            consumers = info.consumers
            created = iso(info.created)
            updated = iso(info.updated)
        }
    }

    /// One signal as `signals ID` prints it: its versions, consumers and pending deliveries.
    package struct SignalDetail: Codable, Sendable {
        package let signal: SignalRecord?
        package let versions: [SignalVersion]
        package let consumers: [ConsumerInfo]
        package let pending: [PendingDelivery]
    }

    package struct SignalVersion: Codable, Sendable {
        package let version: UInt64
        package let posted: String
        package let terminates: Bool
        package let payload: JSONValue?
        /// The poster's trace context, when it had a tracer.
        package let traceContext: [String: String]?
    }

    package static func signals(_ center: SignalCenter) throws -> [SignalRecord] {
        try center.signals().map(SignalRecord.init)
    }

    package static func signal(_ id: SignalID, in center: SignalCenter) throws -> SignalDetail {
        let versions = try center.versions(of: id)
        return SignalDetail(
            signal: try center.signals().first { $0.id == id }.map(SignalRecord.init),
            versions: versions.map { SignalVersion(version: $0.version, posted: iso($0.posted), terminates: $0.terminatesConsumersAfterDelivery,
                                                   payload: JSONValue.parse($0.payload),
                                                   traceContext: $0.traceContext.isEmpty ? nil : $0.traceContext.fields) },
            consumers: try center.consumers(of: id),
            pending: try center.pendingDeliveries().filter { $0.consumer.signal == id })
    }

    // MARK: shared

    /// A time given as ISO 8601 or as an age before now (`15m`, `2h`, `7d`), as `--updated-after` takes it.
    package static func time(_ text: String, option: String) throws -> WallTime {
        try Selection.time(text, option: option)
    }

    /// Instance `id`, or a usage error saying how to list the ones there are.
    package static func existing(_ store: WorkflowStore, id: String) throws -> InstanceInfo {
        guard let instance = try store.instance(id: id) else {
            throw ToolError.usage("no instance \"\(id)\" in \(store.path); list them with `wfctl list \(store.path)`")
        }
        return instance
    }

    /// The registered support for instance `id`'s workflow type, or a usage error saying how to add it.
    package static func registeredSupport(store: WorkflowStore, id: String, types: WorkflowTypes) throws -> WorkflowTypes.Support {
        let instance = try existing(store, id: id)
        guard let support = types.support(for: instance.workflowType) else {
            throw ToolError.usage(
                "the workflow type \(instance.workflowType) of \"\(id)\" is not registered in this tool; build one with WorkflowTool.main(types:) that registers it")
        }
        return support
    }
}
