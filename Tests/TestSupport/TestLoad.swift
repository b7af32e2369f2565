import Foundation

/// How much data-volume tests write: all of it, or a tenth under a sanitizer, where every memory
/// access is instrumented (`tools/test --sanitize` sets `WORKFLOW_TEST_LOAD=light`). The tests
/// check the same properties either way; only their volume shrinks.
public enum TestLoad {
    /// Whether the light load is asked for.
    public static let isLight = ProcessInfo.processInfo.environment["WORKFLOW_TEST_LOAD"] == "light"

    /// `full`, or a tenth of it (at least 1) under the light load.
    public static func scaled(_ full: Int) -> Int { isLight ? max(1, full / 10) : full }
}
