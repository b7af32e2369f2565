/// Where a node sits in the tree: the workflow type and key of each node from the root down.
/// Stable across runs of the same program, so the durable log can name an action's target.
public struct NodePath: Hashable, Sendable, Codable, CustomStringConvertible {
    /// One step from a parent to a child.
    public struct Segment: Hashable, Sendable, Codable {
        /// The workflow's ``Workflow/workflowName`` (by default its module-qualified type name,
        /// e.g. `MyApp.UploadWorkflow`).
        public let workflowType: String
        /// The key the parent rendered it under (`""` when none).
        public let key: String

        /// A step to the child of `workflowType` rendered under `key`.
        public init(workflowType: String, key: String) {
            self.workflowType = workflowType
            self.key = key
        }
    }

    /// How a path's description names workflow types (rule D1's node paths in digests, snapshot
    /// keys and idempotency keys, so an instance keeps its naming for life).
    public enum Naming: Sendable, Hashable {
        /// Module prefixes dropped from every part of the name, generic arguments kept:
        /// `TaskWorkflow<BankReply>` (every instance started since issue 59).
        case readable
        /// The name after its last dot, as instances started before issue 59 named their nodes:
        /// `BankReply>` for `DurableWorkflow.TaskWorkflow<Payments.BankReply>`.
        case legacy
    }

    /// The steps from the root (first) to the node (last).
    public let segments: [Segment]

    /// `/Root/Child[key]/Leaf`, with module prefixes dropped for readability (computed once:
    /// digests and snapshots name every node by it).
    public let description: String

    /// How ``description`` names types; children's paths name them the same way.
    public let naming: Naming

    /// A path made of `segments`, described with `naming`.
    public init(segments: [Segment], naming: Naming = .readable) {
        self.segments = segments
        self.naming = naming
        self.description = Self.describe(segments, naming: naming)
    }

    /// The path of a child of this node (named as this one is).
    public func appending(workflowType: String, key: String) -> NodePath {
        NodePath(segments: segments + [Segment(workflowType: workflowType, key: key)], naming: naming)
    }

    private static func describe(_ segments: [Segment], naming: Naming) -> String {
        "/" + segments.map { segment in
            let name = readableName(segment.workflowType, naming: naming)
            return segment.key.isEmpty ? name : "\(name)[\(segment.key)]"
        }.joined(separator: "/")
    }

    /// `typeName` without its module prefixes: `Payments.Order` → `Order`,
    /// `DurableWorkflow.TaskWorkflow<Payments.BankReply>` → `TaskWorkflow<BankReply>` (with
    /// ``Naming/legacy``, whatever follows the last dot).
    package static func readableName(_ typeName: String, naming: Naming = .readable) -> String {
        guard naming == .readable else { return typeName.split(separator: ".").last.map(String.init) ?? typeName }
        var name = "", word = ""
        for character in typeName {
            switch character {
            case ".":
                // What came before the dot was a module or an enclosing name: dropped.
                word = ""
            case "<", ">", ",", " ", "(", ")", "[", "]", ":", "?":
                name += word
                name.append(character)
                word = ""
            default:
                word.append(character)
            }
        }
        return name + word
    }

    private enum CodingKeys: String, CodingKey { case segments }

    public init(from decoder: any Decoder) throws {
        self.init(segments: try decoder.container(keyedBy: CodingKeys.self).decode([Segment].self, forKey: .segments))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(segments, forKey: .segments)
    }

    /// Paths are equal when their segments are (however they are described).
    public static func == (lhs: NodePath, rhs: NodePath) -> Bool { lhs.segments == rhs.segments }

    public func hash(into hasher: inout Hasher) { hasher.combine(segments) }

    /// The name of `type` in paths: its ``Workflow/workflowName``.
    package static func typeName<W: Workflow>(_ type: W.Type) -> String { W.workflowName }
}

/// Where an applied action came from; recorded with every durable log entry.
public enum ActionOrigin: String, Sendable, Codable, CaseIterable {
    /// A ``Sink`` handed out by a render pass.
    case sink
    /// A ``Worker``'s output.
    case worker
    /// A durable timer firing.
    case timer
    /// A signal delivered to a waiting workflow.
    case signal
    /// New props from the host (`update(workflow:)`).
    case props
    /// The host's consumer acknowledged root outputs (``WorkflowHost/acknowledgeOutputs(through:)``):
    /// no action is applied.
    case acknowledgement
    /// A control request (rule O2: an operator's cancel, terminate, pause or unpause), or the
    /// engine's end of a cancel request at its deadline.
    case control
}
