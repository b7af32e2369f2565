#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DurableWorkflow
import Foundation
import TestSupport
import Workflow
import WorkflowLocks

/// The control plane from outside (issue 59, point 2): a booking service runs in a child process
/// (`booking-service`), and this process cancels, pauses (then unpauses) and terminates its
/// instances at random moments of their lives, through its own store of the same backend. Then
/// each instance's log is checked against what its requests' answers say: one cancel entry and
/// cleanup once (children per the policy), nothing applied while paused and the hold's timer
/// fired exactly once, nothing after a terminate, and no call reaching the desk twice.
public struct ControlScenario {
    /// The child's store (a directory, or a PostgreSQL URL).
    public var location: String
    public var ledger: String
    /// How many instances each verb gets (cancel, pause, terminate): three times as many run.
    public var perVerb: Int
    public var seed: UInt64

    public init(location: String, ledger: String, perVerb: Int, seed: UInt64 = 59) {
        self.location = location
        self.ledger = ledger
        self.perVerb = perVerb
        self.seed = seed
    }

    public struct Outcome: Sendable {
        /// Requests by verb and outcome (`cancel applied`, `pause unchanged`, ...).
        public var answers: [String: Int] = [:]
        /// Final statuses, counted.
        public var statuses: [InstanceStatus: Int] = [:]
        public var problems: [String] = []
    }

    /// What the controller asked of one instance, and what it was told.
    private struct Asked: Sendable {
        var verb: ControlVerb
        var answer: ControlAnswer?
        var unpause: ControlAnswer?
        var error: String?
    }

    public func run(controller store: WorkflowStore) async throws -> Outcome {
        var outcome = Outcome()
        let count = perVerb * 3
        let child = try ChildProcess(["booking-service", location, ledger, "\(count)", "\(seed)"], mergeStandardError: true)
        defer { child.kill() }
        guard child.readLine(until: { $0 == "ready" || $0.hasPrefix("error") }, timeout: .seconds(120)) == "ready" else {
            outcome.problems.append("the service did not start its bookings: \(child.diagnosis)")
            return outcome
        }
        var generator = SeededGenerator(state: seed &+ 1)
        let plan = (0..<count).map { index -> (String, ControlVerb, Int, Int) in
            let verb: ControlVerb = [.cancel, .pause, .terminate][index % 3]
            return ("bk-\(index)", verb, Int.random(in: 0...2_000, using: &generator), Int.random(in: 50...600, using: &generator))
        }
        let asked = Lock<[String: Asked]>([:])
        await withTaskGroup(of: Void.self) { group in
            for (id, verb, delay, pauseFor) in plan {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(delay))
                    var record = Asked(verb: verb)
                    do {
                        record.answer = try await store.control(verb, id: id, reason: "scenario", deadline: .seconds(30), timeout: .seconds(60))
                        if verb == .pause, record.answer?.outcome == .applied {
                            try await Task.sleep(for: .milliseconds(pauseFor))
                            record.unpause = try await store.unpause(id: id, timeout: .seconds(60))
                        }
                    } catch {
                        record.error = "\(error)"
                    }
                    asked.withLock { $0[id] = record }
                }
            }
        }
        // Every booking ends: confirmed, cancelled or terminated.
        let ids = plan.map(\.0)
        let deadline = ContinuousClock.now + .seconds(180)
        var ended = false
        while ContinuousClock.now < deadline {
            let statuses = try ids.map { try store.instance(id: $0)?.status }
            if statuses.allSatisfy({ $0?.hasEnded == true }) {
                ended = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        child.kill(SIGTERM)
        let childLines = child.readRemainingLines(timeout: .seconds(60))
        try? childLines.joined(separator: "\n").write(toFile: ledger + ".child", atomically: true, encoding: .utf8)
        _ = try? child.waitForExit()
        if !ended {
            let open = try ids.filter { try store.instance(id: $0)?.status.hasEnded != true }
            outcome.problems.append("\(open.count) booking(s) did not end: \(open.prefix(5))")
        }
        let calls = BookingDesk.read(ledger: ledger)
        var callsByKey: [String: Int] = [:]
        for call in calls { callsByKey["\(call.verb) \(call.key)", default: 0] += 1 }
        for (call, times) in callsByKey where times > 1 { outcome.problems.append("\(call) reached the desk \(times) times") }
        let requests = asked.withLock { $0 }
        for id in ids {
            guard let record = requests[id] else {
                outcome.problems.append("\(id): no request was made")
                continue
            }
            if let error = record.error { outcome.problems.append("\(id): \(record.verb.rawValue) failed: \(error)") }
            if let answer = record.answer { outcome.answers["\(record.verb.rawValue) \(answer.outcome.rawValue)", default: 0] += 1 }
            if let unpause = record.unpause { outcome.answers["unpause \(unpause.outcome.rawValue)", default: 0] += 1 }
            // Its calls' keys begin with its id and incarnation.
            outcome.problems += try check(id, record, in: store, calls: calls.filter { $0.key.hasPrefix("\(id)~") }, outcome: &outcome)
        }
        return outcome
    }

    /// What is wrong with instance `id`'s log, given what its request's answer said.
    private func check(
        _ id: String, _ asked: Asked, in store: WorkflowStore, calls: [(verb: String, key: String, attempt: Int)], outcome: inout Outcome
    ) throws -> [String] {
        var problems: [String] = []
        guard let instance = try store.instance(id: id) else { return ["\(id): gone"] }
        outcome.statuses[instance.status, default: 0] += 1
        let entries = try store.entries(of: id)
        let tags = entries.map(\.actionTag)
        let configuration = Booking.configuration(desk: BookingDesk())
        let state = try store.state(of: id, as: Booking.self, configuration: configuration).rootState(as: Booking.State.self)
        let verbs = calls.map(\.verb)
        func count(_ tag: String) -> Int { tags.filter { $0 == tag }.count }
        let applied = asked.answer?.outcome == .applied
        switch asked.verb {
        case .cancel:
            if applied {
                guard count(ControlEntry.cancelTag) == 1, let cancel = entries.first(where: { $0.actionTag == ControlEntry.cancelTag }) else {
                    return ["\(id): \(count(ControlEntry.cancelTag)) cancel entries for an applied cancel: \(tags)"]
                }
                if cancel.sequence != asked.answer?.sequence { problems.append("\(id): the answer names entry \(asked.answer?.sequence ?? 0), the log \(cancel.sequence)") }
                if instance.status != .cancelled { problems.append("\(id): \(instance.status) after an applied cancel") }
                if !state.released || verbs.filter({ $0 == "release" }).count != 1 {
                    problems.append("\(id): cleaned up \(verbs.filter { $0 == "release" }.count) times (released: \(state.released))")
                }
                // The child saw the request exactly when it ran, that is while the booking held.
                let before = try store.state(of: id, as: Booking.self, at: cancel.sequence - 1, configuration: configuration)
                    .rootState(as: Booking.State.self)
                let expected = before.phase == .holding ? 1 : 0
                if state.childrenNotified != expected {
                    problems.append("\(id): the child was told \(state.childrenNotified) times, cancelled while \(before.phase)")
                }
                if verbs.contains("confirm"), before.phase != .confirming {
                    problems.append("\(id): confirmed though cancelled while \(before.phase)")
                }
            } else if count(ControlEntry.cancelTag) != 0 {
                problems.append("\(id): a cancel entry for a cancel answered \(asked.answer?.outcome.rawValue ?? "-")")
            }
        case .pause:
            let pauses = count(ControlEntry.pauseTag), unpauses = count(ControlEntry.unpauseTag)
            if applied {
                guard pauses == 1, unpauses == 1, let pause = tags.firstIndex(of: ControlEntry.pauseTag) else {
                    return ["\(id): \(pauses) pause and \(unpauses) unpause entries: \(tags)"]
                }
                if tags[pause + 1] != ControlEntry.unpauseTag { problems.append("\(id): entries between the pause and the unpause: \(tags)") }
                if entries[pause].sequence != asked.answer?.sequence { problems.append("\(id): the pause's answer names another entry") }
            } else if pauses != 0 {
                problems.append("\(id): a pause entry for a pause answered \(asked.answer?.outcome.rawValue ?? "-")")
            }
            if instance.status == .completed {
                let timers = entries.filter { $0.origin == .timer }.count
                if state.timerFired != 1 || timers != 1 { problems.append("\(id): the hold's timer fired \(state.timerFired) times, \(timers) entries") }
            }
        case .terminate:
            if applied {
                if tags.last != ControlEntry.terminateTag || count(ControlEntry.terminateTag) != 1 {
                    problems.append("\(id): the terminate entry is not the last and only one: \(tags)")
                }
                if instance.status != .terminated { problems.append("\(id): \(instance.status) after an applied terminate") }
            } else if count(ControlEntry.terminateTag) != 0 {
                problems.append("\(id): a terminate entry for a terminate answered \(asked.answer?.outcome.rawValue ?? "-")")
            }
        case .unpause, .delete:
            break
        }
        if instance.status == .completed, !(verbs.contains("confirm") && state.phase == .done) {
            problems.append("\(id): completed without its confirmation (\(verbs), \(state.phase))")
        }
        return problems
    }
}
