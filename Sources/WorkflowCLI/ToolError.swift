import DurableWorkflow
import WorkflowSignals
import WorkflowStorage

/// A failure of a `wfctl` command, with its exit code: 1 a finding (e.g. a divergence), 2 a usage
/// problem (unknown id, sequence out of range, unregistered type), 3 a store problem.
package struct ToolError: Error {
    package let code: Int32
    package let message: String

    package init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    package static func usage(_ message: String) -> ToolError { ToolError(code: 2, message: message) }
    static func finding(_ message: String) -> ToolError { ToolError(code: 1, message: message) }
    /// A replay gate's finding: the exit code of its worst outcome (10 to 13).
    static func gate(_ code: Int32, _ message: String) -> ToolError { ToolError(code: code, message: message) }

    /// Whether the command printed its report before failing (a finding of `verify`, `check` or the gate).
    var followsReport: Bool { code == 1 || (10...13).contains(code) }

    /// Maps library errors to exit codes.
    package static func from(_ error: any Error) -> ToolError {
        switch error {
        case let error as ToolError:
            return error
        case let error as DurableError:
            switch error.kind {
            case .instanceNotFound, .sequenceOutOfRange, .wrongWorkflowType, .instanceExists, .instanceInUse:
                return ToolError(code: 2, message: error.description)
            case .nonDeterministic, .replayMismatch:
                return ToolError(code: 1, message: error.description)
            default:
                return ToolError(code: 3, message: describeStorage(error.description, error.storageFailure))
            }
        case let error as SignalError:
            return ToolError(code: error.kind == .unknownSignal || error.kind == .unknownConsumer ? 2 : 3,
                             message: describeStorage(error.description, error.storageFailure))
        case let error as StorageFailure:
            return ToolError(code: 3, message: describeStorage(error.description, error))
        default:
            return ToolError(code: 3, message: "\(error)")
        }
    }

    private static func describeStorage(_ text: String, _ storage: StorageFailure?) -> String {
        switch storage?.kind {
        case .notFound? where storage!.operation == "open" && storage!.backend == "LMDB":
            return "\(storage!.location) is not a store: no such directory"
        case .notFound? where storage!.operation == "open": return "\(storage!.location) is not a store: \(storage!.detail)"
        case .notAStore?: return "\(storage!.location) is not a store: \(storage!.detail)"
        default: return text
        }
    }
}
