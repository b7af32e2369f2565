import Foundation
import Workflow
import WorkflowCodec
import WorkflowStorage

/// What the running build would make of one instance written by another (rule V3): a deploy's
/// replay gate, run over a copy of a store or an export (with its snapshots) before the build
/// touches the real one.
public struct ReplayGateResult: Sendable, Codable, Hashable {
    /// How the instance fares under this build, from best to worst.
    public enum Outcome: String, Sendable, Codable, CaseIterable, Comparable {
        /// It resumes, replays from its first entry, and waits on what it waited on before.
        case unchanged
        /// It resumes as it was, but a replay from its first entry (an import of an export, time
        /// travel before its snapshot) fails or ends in another state: the change alters what
        /// entries before its snapshot do.
        case fullReplayFails
        /// It resumes with its state, but this build's render declares other waits (timers,
        /// workers, tasks, signal waits) or the same under other idempotency keys: a removed one
        /// leaves it stuck, an added one starts new work, a new key repeats external work.
        case resumesWithOtherWaits
        /// It resumes, with a state that differs from the one its log recorded (digest checks
        /// are off in this build's configuration, so the resume would not notice).
        case resumesWithDifferentState
        /// A resume fails: the instance would be marked failed (or left, for a version it does
        /// not run).
        case failsAtResume

        /// The exit code of a gate whose worst instance has this outcome.
        public var exitCode: Int32 {
            switch self {
            case .unchanged: 0
            case .fullReplayFails: 10
            case .resumesWithOtherWaits: 11
            case .resumesWithDifferentState: 12
            case .failsAtResume: 13
            }
        }

        public static func < (lhs: Outcome, rhs: Outcome) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// Where replay first parted from the log: the entry, and the node's state before it (which
    /// both builds agree on, when the entry before carries a digest) and after it, as this build
    /// computes it, with the fields that changed.
    public struct Divergence: Sendable, Codable, Hashable {
        public let sequence: UInt64
        public let action: String?
        public let node: String?
        /// The node's state before the entry, as JSON.
        public let stateBefore: String?
        /// The node's state after the entry, as this build replays it, as JSON.
        public let replayedAfter: String?
        /// What this build's apply changed, one field a line (`total: 261 → 511`).
        public let changes: [String]
    }

    /// A wait one build declares and the other does not (or under another key).
    public struct Wait: Sendable, Codable, Hashable {
        /// The declaring node.
        public let node: String
        /// The worker's key in it.
        public let key: String
        /// What it runs under: `<instance><node>#<key>@<sequence>`.
        public let idempotencyKey: String
        /// What it is (timer, task, signal, or the worker's type), where known: this build's
        /// waits only.
        public let kind: String?
    }

    /// A wait declared by both builds, under another idempotency key.
    public struct Rekeyed: Sendable, Codable, Hashable {
        public let before: Wait
        public let after: Wait
    }

    /// The waits the build that wrote the log declared after its last entry, against this build's.
    public struct RenderDiff: Sendable, Codable, Hashable {
        /// Declared before, no longer: the instance will not get what it waited for.
        public let removed: [Wait]
        /// Declared now, not before: new work starts at the resume.
        public let added: [Wait]
        /// Declared by both, under another key: external work may run twice.
        public let rekeyed: [Rekeyed]

        public var isEmpty: Bool { removed.isEmpty && added.isEmpty && rekeyed.isEmpty }
    }

    public let instance: String
    public let workflowType: String
    public let codeVersion: String?
    public let status: InstanceStatus
    public let entries: UInt64
    /// The latest snapshot's sequence (0: none).
    public let snapshot: UInt64
    public let outcome: Outcome
    /// The reason, in terms that are the same for every instance it concerns (results are
    /// grouped by it); `nil` when unchanged.
    public let cause: String?
    /// The error, for `failsAtResume` and `fullReplayFails` (its description, whole).
    public let problem: String?
    /// The error's kind.
    public let problemKind: String?
    /// Where replay first parted from the log.
    public let divergence: Divergence?
    /// The waits the log's build declared against this build's; `nil` when the log does not say
    /// what its build declared (written before declarations were noted, with no snapshot at its end).
    public let renderDiff: RenderDiff?
    /// Digests the replay could not compare (recorded under a state form this build cannot take
    /// its states back to).
    public let uncheckedDigests: Int
    /// Anything else worth knowing (a snapshot this build cannot use).
    public let note: String?
}

extension WorkflowStore {
    /// What this build (`W` and `configuration`) would make of instance `id` (rule V3): a resume
    /// as the configuration would run it; a replay with digest checks on (the state the log
    /// recorded against the one this build reaches); a replay from the first entry; and the waits
    /// the log's build declared after the last entry against this build's. Read-only.
    public func gate<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration = DurableConfiguration()
    ) throws -> ReplayGateResult where W.Rendering: Sendable, W.Output: Sendable {
        guard let record = try record(id: id) else { throw notFound(id) }
        var gate = GateFindings(record: record)
        do {
            try checkCodeVersion(of: record, configuration: configuration)
        } catch let error as DurableError {
            return gate.fails(error, cause: "runs code version \(record.codeVersion ?? "none"), which this build does not")
        }
        // As a resume: from the latest snapshot that fits, digests checked as configured.
        var mismatch: SnapshotMismatch?
        let resumed: StateTree
        do {
            resumed = try resumeTree(id: id, as: type, configuration: configuration, mismatch: &mismatch)
        } catch let error as DurableError where error.kind != .storage && error.kind != .instanceNotFound {
            if error.kind == .nonDeterministic {
                // What the tree would declare past the divergence: the render diff still says
                // what the change does to the instance's waits (a child's key renamed, say).
                var unchecked = configuration
                unchecked.checksRecordedDigests = false
                var ignored: SnapshotMismatch?
                if let tree = try? resumeTree(id: id, as: type, configuration: unchecked, mismatch: &ignored) {
                    gate.renderDiff = tree.recordedWorkers.map { Self.renderDiff(recorded: $0, declared: tree.waits, prefix: tree.idempotencyPrefix) }
                }
            }
            return gate.fails(error, divergence: divergence(of: error, id: id, as: type, configuration: configuration))
        }
        gate.note = mismatch.map { "\($0): a resume replays the whole log" }
        gate.unchecked = resumed.uncheckedDigests
        var checked = configuration
        checked.checksRecordedDigests = true
        if !configuration.checksRecordedDigests {
            // The state the resume reaches, against the one the log recorded.
            do {
                var ignored: SnapshotMismatch?
                _ = try resumeTree(id: id, as: type, configuration: checked, mismatch: &ignored)
            } catch let error as DurableError where error.kind != .storage {
                gate.differs(error, divergence: divergence(of: error, id: id, as: type, configuration: configuration))
            }
        }
        if resumed.replayedFrom > 1 {
            // From the first entry, as an import or time travel before the snapshot would.
            do {
                let full = try rebuild(id: id, as: type, through: nil, useSnapshot: false, configuration: checked)
                if full.digest != resumed.digest {
                    gate.fullReplay(
                        problem: nil,
                        cause: "a replay from the first entry ends in another state than the resume from the snapshot at \(resumed.replayedFrom)",
                        changes: Self.changes(from: resumed, to: full))
                }
            } catch let error as DurableError where error.kind != .storage {
                gate.fullReplay(problem: error, cause: Self.cause(of: error), changes: [],
                                divergence: divergence(of: error, id: id, as: type, configuration: configuration))
            }
        }
        gate.renderDiff = resumed.recordedWorkers.map { Self.renderDiff(recorded: $0, declared: resumed.waits, prefix: resumed.idempotencyPrefix) }
        return gate.result
    }

    /// The tree a resume would rebuild, noting a snapshot it could not use.
    private func resumeTree<W: DurableWorkflow>(
        id: String, as type: W.Type, configuration: DurableConfiguration, mismatch: inout SnapshotMismatch?
    ) throws -> StateTree where W.Rendering: Sendable, W.Output: Sendable {
        do {
            return try rebuildOnce(id: id, as: type, through: nil, useSnapshot: true, configuration: configuration)
        } catch let found as SnapshotMismatch {
            mismatch = found
            do {
                return try rebuildOnce(id: id, as: type, through: nil, useSnapshot: false, configuration: configuration)
            } catch let error as DurableError {
                throw error.replacingSnapshot(found)
            }
        }
    }

    /// Where a divergence `error` names, with the node's state before and after its entry.
    private func divergence<W: DurableWorkflow>(
        of error: DurableError, id: String, as type: W.Type, configuration: DurableConfiguration
    ) -> ReplayGateResult.Divergence? where W.Rendering: Sendable, W.Output: Sendable {
        guard error.kind == .nonDeterministic || error.kind == .replayMismatch, let sequence = error.sequence else { return nil }
        let path = error.nodePath
        func state(at sequence: UInt64) -> String? {
            guard sequence >= 1, let tree = try? stateTree(of: id, as: type, through: sequence, configuration: configuration) else { return nil }
            return tree.nodes.first { path.map($0.path.names) ?? false }?.stateText
        }
        let before = state(at: sequence - 1)
        let after = error.kind == .nonDeterministic ? state(at: sequence) : nil
        return .init(sequence: sequence, action: error.actionTag, node: path, stateBefore: before, replayedAfter: after,
                     changes: Self.fieldChanges(from: before, to: after))
    }

    /// The fields that differ between two trees' states, node by node.
    private static func changes(from old: StateTree, to new: StateTree) -> [String] {
        var changes: [String] = []
        let paths = Set(old.nodes.map(\.path.description)).union(new.nodes.map(\.path.description)).sorted()
        for path in paths {
            let before = old.nodes.first { $0.path.description == path }, after = new.nodes.first { $0.path.description == path }
            switch (before, after) {
            case (nil, let after?): changes.append("+\(path): \(after.stateText)")
            case (let before?, nil): changes.append("-\(path): \(before.stateText)")
            case (let before?, let after?):
                changes += fieldChanges(from: before.stateText, to: after.stateText).map { "\(path) \($0)" }
            case (nil, nil): break
            }
        }
        return changes
    }

    /// The fields that differ between two states given as JSON, one a line: `total: 261 → 511`,
    /// `+priority: 3`, `-counter: 18`.
    static func fieldChanges(from before: String?, to after: String?) -> [String] {
        guard let before, let after, let (old, _) = try? StoredValue.read(Array(before.utf8)),
              let (new, _) = try? StoredValue.read(Array(after.utf8)) else { return [] }
        var changes: [String] = []
        func text(_ value: StoredValue) -> String { String(decoding: value.bytes(.json), as: UTF8.self) }
        func compare(_ old: StoredValue, _ new: StoredValue, at path: String) {
            if case .map(let oldEntries) = old, case .map(let newEntries) = new {
                for entry in newEntries {
                    let name = path.isEmpty ? entry.key : "\(path).\(entry.key)"
                    if let previous = oldEntries.first(where: { $0.key == entry.key }) {
                        compare(previous.value, entry.value, at: name)
                    } else {
                        changes.append("+\(name): \(text(entry.value))")
                    }
                }
                for entry in oldEntries where !newEntries.contains(where: { $0.key == entry.key }) {
                    changes.append("-\(path.isEmpty ? entry.key : "\(path).\(entry.key)"): \(text(entry.value))")
                }
            } else if text(old) != text(new) {
                changes.append("\(path.isEmpty ? "state" : path): \(text(old)) → \(text(new))")
            }
        }
        compare(old, new, at: "")
        return changes
    }

    /// The waits `recorded` (what the log's build declared) and `declared` (this build's) differ in.
    static func renderDiff(recorded: [String: Int], declared: [StateTree.Wait], prefix: String) -> ReplayGateResult.RenderDiff {
        func wait(_ name: String, start: Int, kind: String?) -> ReplayGateResult.Wait {
            let split = name.lastIndex(of: "#").map { (String(name[..<$0]), String(name[name.index(after: $0)...])) } ?? (name, "")
            return .init(node: split.0, key: split.1, idempotencyKey: "\(prefix)\(name)@\(start)", kind: kind)
        }
        var now: [String: (start: Int, wait: StateTree.Wait)] = [:]
        for wait in declared { now[Snapshot.workerKey(wait.path, wait.key)] = (Int(wait.idempotencyKey.split(separator: "@").last.flatMap { Int($0) } ?? 0), wait) }
        var removed: [ReplayGateResult.Wait] = [], added: [ReplayGateResult.Wait] = [], rekeyed: [ReplayGateResult.Rekeyed] = []
        for (name, start) in recorded.sorted(by: { $0.key < $1.key }) {
            if let found = now[name] {
                if found.start != start {
                    rekeyed.append(.init(before: wait(name, start: start, kind: nil), after: wait(name, start: found.start, kind: found.wait.kindName)))
                }
            } else {
                removed.append(wait(name, start: start, kind: nil))
            }
        }
        for (name, found) in now.sorted(by: { $0.key < $1.key }) where recorded[name] == nil {
            added.append(wait(name, start: found.start, kind: found.wait.kindName))
        }
        // A wait that moved to another node path of the same shape (a child's key renamed):
        // the same work under another idempotency key.
        for old in removed {
            if let index = added.firstIndex(where: { $0.key == old.key && shape(of: $0.node) == shape(of: old.node) }) {
                rekeyed.append(.init(before: old, after: added.remove(at: index)))
                removed.removeAll { $0 == old }
            }
        }
        return .init(removed: removed, added: added, rekeyed: rekeyed)
    }

    /// A node path with its keys left out (`/Order/Packing[pack]` is `/Order/Packing`).
    private static func shape(of path: String) -> String {
        path.split(separator: "/").map { $0.split(separator: "[").first.map(String.init) ?? String($0) }.joined(separator: "/")
    }

    /// An instance-independent line for what `error` says.
    static func cause(of error: DurableError) -> String {
        var parts = ["\(error.kind)"]
        if let tag = error.actionTag { parts.append("at \(tag)") }
        if let node = error.nodePath { parts.append("on \(node)") }
        return parts.joined(separator: " ")
    }
}

extension StateTree.Wait {
    /// The kind of wait, as the gate names it.
    var kindName: String {
        switch kind {
        case .timer: "timer"
        case .signal: "signal"
        case .task: "task"
        case .worker(let type): type
        }
    }
}

/// What the gate has found of one instance so far.
private struct GateFindings {
    let record: StoredInstance
    var outcome = ReplayGateResult.Outcome.unchanged
    var cause: String?
    var problem: DurableError?
    var divergence: ReplayGateResult.Divergence?
    var renderDiff: ReplayGateResult.RenderDiff?
    var unchecked = 0
    var note: String?
    var fullReplayProblem: (error: DurableError?, cause: String, changes: [String], divergence: ReplayGateResult.Divergence?)?

    init(record: StoredInstance) { self.record = record }

    mutating func fails(_ error: DurableError, cause: String? = nil, divergence: ReplayGateResult.Divergence? = nil) -> ReplayGateResult {
        outcome = .failsAtResume
        self.cause = cause ?? WorkflowStore.cause(of: error)
        problem = error
        self.divergence = divergence
        return result
    }

    mutating func differs(_ error: DurableError, divergence: ReplayGateResult.Divergence?) {
        outcome = .resumesWithDifferentState
        cause = WorkflowStore.cause(of: error)
        problem = error
        self.divergence = divergence
    }

    mutating func fullReplay(problem: DurableError?, cause: String, changes: [String], divergence: ReplayGateResult.Divergence? = nil) {
        fullReplayProblem = (problem, cause, changes, divergence)
    }

    var result: ReplayGateResult {
        var outcome = self.outcome, cause = self.cause, problem = self.problem, divergence = self.divergence
        if let diff = renderDiff, !diff.isEmpty {
            func names(_ waits: [ReplayGateResult.Wait]) -> String {
                waits.map { wait -> String in Self.shape(of: wait.node) + "#" + wait.key }.joined(separator: ", ")
            }
            var parts: [String] = []
            if !diff.removed.isEmpty { parts.append("render no longer declares " + names(diff.removed)) }
            if !diff.added.isEmpty { parts.append("render now declares " + names(diff.added)) }
            if !diff.rekeyed.isEmpty { parts.append("other idempotency keys for " + names(diff.rekeyed.map(\.before))) }
            if outcome < .resumesWithOtherWaits {
                outcome = .resumesWithOtherWaits
                cause = parts.joined(separator: "; ")
            } else {
                // What render declares differently is part of why replay parts from the log.
                cause = [cause].compactMap { $0 }.joined() + "; " + parts.joined(separator: "; ")
            }
        }
        if outcome < .fullReplayFails, let full = fullReplayProblem {
            outcome = .fullReplayFails
            cause = full.cause
            problem = full.error
            divergence = full.divergence
            if full.error == nil, !full.changes.isEmpty {
                divergence = .init(sequence: record.lastSequence, action: nil, node: nil, stateBefore: nil, replayedAfter: nil, changes: full.changes)
            }
        }
        return ReplayGateResult(
            instance: record.id, workflowType: record.workflowType, codeVersion: record.codeVersion, status: record.status,
            entries: record.lastSequence, snapshot: record.lastSnapshot, outcome: outcome, cause: cause,
            problem: problem?.description, problemKind: problem.map { "\($0.kind)" }, divergence: divergence, renderDiff: renderDiff,
            uncheckedDigests: unchecked, note: note)
    }

    /// A node path without its keys, for causes shared by instances.
    static func shape(of path: String) -> String {
        path.split(separator: "/").map { $0.split(separator: "[").first.map(String.init) ?? String($0) }.joined(separator: "/").prefixed
    }
}

private extension String {
    var prefixed: String { hasPrefix("/") ? self : "/" + self }
}
