#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TestSupport

/// The payments service of issue 59 in two runs of the child's `drain-payments`: the first is
/// stopped with SIGTERM while its bank calls are in flight, the second finishes every payment;
/// then the ledger says which calls reached the bank twice.
public struct DrainScenario {
    public var store: String
    public var ledger: String
    public var payments: Int
    /// The bank's slowest answer, in milliseconds.
    public var slowestMilliseconds: Int
    /// The service's drain deadline in milliseconds (`nil`: no drain).
    public var drainMilliseconds: Int?
    /// How long after "ready" the first run gets SIGTERM.
    public var stopAfter: Duration

    public init(store: String, ledger: String, payments: Int, slowestMilliseconds: Int, drainMilliseconds: Int?, stopAfter: Duration) {
        self.store = store
        self.ledger = ledger
        self.payments = payments
        self.slowestMilliseconds = slowestMilliseconds
        self.drainMilliseconds = drainMilliseconds
        self.stopAfter = stopAfter
    }

    public struct Outcome {
        /// What the first run's drain reported.
        public var drained = -1
        public var abandoned = -1
        /// Calls (`KEY ATTEMPT`) that reached the bank more than once, and how many extra times.
        public var repeatedCalls = 0
        /// Payments the second run saw finish, and whether it said "all finished".
        public var finishedSecond = 0
        public var allFinished = false
        /// From SIGTERM to the first run's exit.
        public var shutdown: Duration = .zero
        public var problems: [String] = []
    }

    private func arguments() -> [String] {
        ["drain-payments", store, ledger, "\(payments)", "\(slowestMilliseconds)", drainMilliseconds.map { "\($0)" } ?? "none"]
    }

    public func run() throws -> Outcome {
        var outcome = Outcome()
        let first = try ChildProcess(arguments(), mergeStandardError: true)
        guard first.readLine(until: { $0 == "ready" }, timeout: .seconds(120)) == "ready" else {
            outcome.problems.append("the first run did not start its payments: \(first.diagnosis)")
            first.kill()
            return outcome
        }
        usleep(UInt32(stopAfter.components.seconds * 1_000_000 + stopAfter.components.attoseconds / 1_000_000_000_000))
        let signalled = ContinuousClock.now
        first.kill(SIGTERM)
        let lines = first.readRemainingLines(timeout: .seconds(120))
        let status = try first.waitForExit()
        outcome.shutdown = ContinuousClock.now - signalled
        if status != 0 { outcome.problems.append("the first run exited with \(status): \(lines.suffix(3))") }
        if let report = lines.first(where: { $0.hasPrefix("drained ") }) {
            let words = report.split(separator: " ")
            outcome.drained = Int(words[1]) ?? -1
            outcome.abandoned = Int(words[3]) ?? -1
        } else {
            outcome.problems.append("the first run reported no drain: \(lines.suffix(3))")
        }

        let second = try ChildProcess(arguments(), mergeStandardError: true)
        let rest = second.readRemainingLines(timeout: .seconds(300))
        if try second.waitForExit() != 0 { outcome.problems.append("the second run failed: \(rest.suffix(3))") }
        outcome.finishedSecond = rest.filter { $0.hasPrefix("finished ") }.count
        outcome.allFinished = rest.contains("all finished")
        outcome.repeatedCalls = LedgerBank.calls(in: ledger).values.reduce(0) { $0 + max(0, $1 - 1) }
        return outcome
    }
}
