import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress line on standard error for a long command (`verify`, `export`, `import`), shown
/// only when standard error is a terminal (never in pipes, logs or tests), rewritten in place at
/// most ten times a second and cleared at the end.
struct Progress {
    private let what: String
    private let total: Int?
    private let shown: Bool
    private var done = 0
    private var lastShown = ContinuousClock.now - .seconds(1)

    /// Progress through `total` items (`nil`: unknown), described as `what` ("verified", ...).
    init(_ what: String, total: Int?, terminal: Bool = isatty(STDERR_FILENO) != 0) {
        self.what = what
        self.total = total
        self.shown = terminal
    }

    /// One more item done.
    mutating func advance(by count: Int = 1) {
        done += count
        guard shown, ContinuousClock.now - lastShown >= .milliseconds(100) else { return }
        lastShown = ContinuousClock.now
        write("\r\(line)")
    }

    /// Clears the line.
    func finish() {
        if shown { write("\r\u{1B}[K") }
    }

    /// The text shown: `verified 120 of 3000 instances`.
    var line: String { total.map { "\(what) \(done) of \($0)" } ?? "\(what) \(done)" }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
