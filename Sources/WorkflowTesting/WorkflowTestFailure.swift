/// A failed expectation of a tester. Thrown, so it fails a Swift Testing or an XCTest test alike,
/// with a message saying what was expected and what happened.
public struct WorkflowTestFailure: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let message: String
    /// Where the assertion was written.
    public let file: String
    public let line: Int

    public var description: String { "\(file):\(line): \(message)" }
}

func failure(_ message: String, _ file: StaticString, _ line: UInt) -> WorkflowTestFailure {
    WorkflowTestFailure(message: message, file: "\(file)", line: Int(line))
}
