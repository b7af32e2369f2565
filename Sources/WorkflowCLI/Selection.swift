import ArgumentParser
import DurableWorkflow
import Foundation
import Workflow

/// Which instances a bulk verb takes (rule O3): every instance that passes every filter given.
struct Selection: ParsableArguments {
    @Option(help: "Only instances with this status (repeat it for several; the verb's own default otherwise).")
    var status: [InstanceStatus] = []

    @Option(help: "Only instances whose root workflow type has this name (with or without module).")
    var type: String?

    @Option(name: .customLong("version"), help: "Only instances started under this code version (\"-\": under none).")
    var codeVersion: String?

    @Option(help: "Only failed instances whose error has this kind (nonDeterministic, unknownActionType, ...).")
    var kind: String?

    @Option(help: "Only instances last updated before this time: ISO 8601 (2026-12-07T10:00:00Z) or an age (90s, 15m, 2h, 7d).")
    var updatedBefore: String?

    @Option(help: "Only instances last updated after this time (as --updated-before).")
    var updatedAfter: String?

    @Flag(help: "Say which instances the verb would take, and change nothing.")
    var dryRun = false

    /// Whether a filter was given (a bulk verb takes none by default: name an id or a filter).
    var filters: Bool {
        !status.isEmpty || type != nil || codeVersion != nil || kind != nil || updatedBefore != nil || updatedAfter != nil
    }

    /// The instances of `store` that pass, in id order; with no `--status`, those whose status is
    /// one of `defaultStatuses` (`nil`: any).
    func select(from store: WorkflowStore, defaultStatuses: [InstanceStatus]?) throws -> [InstanceInfo] {
        let statuses = status.isEmpty ? defaultStatuses : status
        let version: String?? = codeVersion.map { $0 == "-" ? nil : $0 }
        let before = try updatedBefore.map { try Self.time($0, option: "--updated-before") }
        let after = try updatedAfter.map { try Self.time($0, option: "--updated-after") }
        return try store.instances(workflowType: type, codeVersion: version).filter { instance in
            (statuses?.contains(instance.status) ?? true)
                && (kind.map { instance.failure?.hasPrefix($0 + ":") == true } ?? true)
                && (before.map { instance.updated < $0 } ?? true)
                && (after.map { instance.updated > $0 } ?? true)
        }
    }

    /// A time given as ISO 8601 or as an age before now.
    static func time(_ text: String, option: String) throws -> WallTime {
        if let age = duration(text) { return WallTime.now().advanced(by: .zero - age) }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text) {
            return WallTime(nanosecondsSinceEpoch: Int64(date.timeIntervalSince1970 * 1_000_000_000))
        }
        throw ToolError.usage("\(option) takes an ISO 8601 time (2026-12-07T10:00:00Z) or an age (90s, 15m, 2h, 7d), not \"\(text)\"")
    }

    /// `500ms`, `10s`, `15m`, `2h`, `7d`, or a plain number of seconds.
    static func duration(_ text: String) -> Duration? {
        let units: [(String, Int64)] = [("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000),
                                        ("d", 86_400_000_000_000)]
        for (suffix, nanoseconds) in units where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value >= 0 else { return nil }
            return .nanoseconds(Int64(value * Double(nanoseconds)))
        }
        return Double(text).flatMap { $0 >= 0 ? .nanoseconds(Int64($0 * 1_000_000_000)) : nil }
    }
}

/// A duration option: `500ms`, `10s`, `15m`, `2h`, `7d`.
struct DurationArgument: ExpressibleByArgument, Sendable {
    let duration: Duration

    init?(argument: String) {
        guard let duration = Selection.duration(argument) else { return nil }
        self.duration = duration
    }

    init(_ duration: Duration) { self.duration = duration }

    var defaultValueDescription: String { "\(duration)" }
}
