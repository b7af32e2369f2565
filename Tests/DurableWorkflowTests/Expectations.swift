import DurableWorkflow
import Testing

/// Expects `body` to throw a ``DurableError`` of `kind`; returns it for further checks.
@discardableResult
func expectDurableError(
    _ kind: DurableError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> DurableError? {
    let error = #expect(throws: DurableError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
    return error
}
