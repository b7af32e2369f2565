/// What a host does with a programmer error: sending during a render pass, using a context
/// after its pass, declaring the same child or worker twice in one pass.
///
/// Each of these is a bug that would otherwise lose or misroute events, so by default the
/// process stops with a message naming the workflow (like a failed precondition). Tests can
/// report them to a closure instead; the runtime then carries on as sensibly as it can
/// (the action sent during render is applied after the pass, the duplicate child is ignored).
public enum ProgrammerErrorPolicy: Sendable {
    /// Stop the process with the message (the default).
    case trap
    /// Hand the message to a closure and carry on.
    case report(@Sendable (String) -> Void)

    /// Whether errors stop the process.
    package var traps: Bool {
        if case .trap = self { return true }
        return false
    }

    package func raise(_ message: String, file: StaticString = #fileID, line: UInt = #line) {
        switch self {
        case .trap: fatalError("Workflow programmer error: \(message)", file: file, line: line)
        case .report(let handler): handler(message)
        }
    }
}
