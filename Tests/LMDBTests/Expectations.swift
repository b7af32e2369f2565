import LMDB
import Testing

/// Expects `body` to throw an ``LMDBError`` of `kind`; returns it for further checks.
@discardableResult
func expectLMDBError(
    _ kind: LMDBError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> LMDBError? {
    let error = #expect(throws: LMDBError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
    return error
}
