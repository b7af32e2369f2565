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

/// Throws a failure naming `what` unless `actual` equals `expected`.
func requireEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String, _ file: StaticString, _ line: UInt) throws {
    guard actual == expected else { throw failure("expected \(what) \(expected), got \(actual)", file, line) }
}
