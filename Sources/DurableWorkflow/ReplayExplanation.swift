import Workflow
import WorkflowCodec

/// What a failed replay tells the user, in the terms of their workflow: which child render
/// declares differently, which fields an entry changed, whether digest checks are the way out
/// (rule D11). Built only on the error path.
enum ReplayExplanation {
    /// Why the tree has no node at `path` (an entry's target): the nodes under the same parent
    /// that render declares now, named by workflow and key.
    static func missingNode(_ path: NodePath, in tree: any RuntimeTree) -> String {
        let live = tree.nodeStates().map(\.path)
        guard let target = path.segments.last else { return "the entry names no node" }
        let parent = Array(path.segments.dropLast())
        guard parent.isEmpty || live.contains(where: { $0.segments == parent }) else {
            return "render no longer declares \(NodePath(segments: parent)), the parent of \(path)"
        }
        let siblings = live.filter { $0.segments.count == path.segments.count && Array($0.segments.dropLast()) == parent }
            .compactMap(\.segments.last)
        let name = shortName(target.workflowType)
        if let renamed = siblings.first(where: { $0.workflowType == target.workflowType }) {
            return "render now declares \(name) under key \"\(renamed.key)\"; the log has entries for key \"\(target.key)\""
        }
        if let retyped = siblings.first(where: { $0.key == target.key }) {
            return "render now declares \(shortName(retyped.workflowType)) under key \"\(target.key)\"; the log has entries for \(name) there"
        }
        let declared = siblings.map { $0.key.isEmpty ? shortName($0.workflowType) : "\(shortName($0.workflowType))[\($0.key)]" }
        return "render no longer declares \(name) under key \"\(target.key)\""
            + (declared.isEmpty ? "; its parent declares no child now" : "; its parent declares \(declared.joined(separator: ", ")) now")
    }

    /// What render declares after the entry against what the build that logged it declared
    /// (workers by `<path>#<key>`), when they differ: a child rendered under another key or type,
    /// a worker added or removed.
    static func declaredDifferently(recorded: [String: Int], now: [String: Int]) -> String? {
        let added = now.keys.filter { recorded[$0] == nil }.sorted(), removed = recorded.keys.filter { now[$0] == nil }.sorted()
        guard !added.isEmpty || !removed.isEmpty else { return nil }
        var parts: [String] = []
        if !added.isEmpty { parts.append("render now declares \(added.joined(separator: ", "))") }
        if !removed.isEmpty { parts.append("the build that logged this entry declared \(removed.joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }

    /// What to do about a replay that no longer finds the node an entry targets.
    static let missingNodeRecovery = "The build that logged the entry declared that node. Keep declaring it for the instances "
        + "that logged it (branch on the instance's code version), or resume them with the build that wrote them"

    /// What to do about a state that differs from the recorded digest. Digest checks are named
    /// only for a state that holds a collection encoded in hash order before encodings were
    /// canonical, the one case turning them off was made for.
    static func divergenceRecovery(stateHoldsUnorderedCollection: Bool) -> String {
        var text = "The build that logged this entry computed another state from it. If the workflow's code changed since "
            + "(apply, render, the state's fields or their encoding), keep the old behaviour for the instances that logged it, "
            + "or resume them with the build that wrote them; if it did not, make render and actions depend only on props, "
            + "state and ApplyContext (no randomness, no system clock)"
        if stateHoldsUnorderedCollection {
            text += ". This state holds a Set or a Dictionary: if its digests were recorded before encodings were canonical "
                + "(in the writing process's hash order), resume or verify it with DurableConfiguration.checksRecordedDigests "
                + "= false (wfctl: --no-digest-check)"
        }
        return text
    }

    /// Whether the state of the node at `path` holds a collection encoded in hash order.
    static func holdsUnorderedCollection(at path: NodePath, in tree: any RuntimeTree) -> Bool {
        guard let state = tree.nodeStates().first(where: { $0.path == path })?.state else { return false }
        return WorkflowCodec.holdsUnorderedCollection(state)
    }

    /// `error` (from decoding a state or payload) in one short line.
    static func decoding(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "" : " at \(path)"
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "no value for the field \"\(key.stringValue)\"\(at(context))"
        case .typeMismatch(let type, let context):
            return "the value\(at(context)) is not \(type)"
        case .valueNotFound(let type, let context):
            return "no \(type) value\(at(context))"
        case .dataCorrupted(let context):
            return "\(context.debugDescription)\(at(context))"
        @unknown default:
            return "\(error)"
        }
    }

    /// A workflow name without module prefixes, generic arguments included
    /// (`DurableWorkflow.TaskWorkflow<Swift.String>` is `TaskWorkflow<String>`).
    static func shortName(_ name: String) -> String {
        var result = "", word = ""
        for character in name {
            if character == "<" || character == ">" || character == "," || character == " " {
                result += word.split(separator: ".").last.map(String.init) ?? word
                result.append(character)
                word = ""
            } else {
                word.append(character)
            }
        }
        return result + (word.split(separator: ".").last.map(String.init) ?? word)
    }
}
