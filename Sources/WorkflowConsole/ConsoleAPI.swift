import DurableWorkflow
import Foundation
import Workflow
import WorkflowCLI
import WorkflowSignals

/// The console's JSON API, apart from HTTP: each endpoint reads the store (read-only, as `wfctl`'s
/// read commands do) and answers with the records `wfctl --json` prints (docs/wfctl-json.md), or
/// with an error and its HTTP status.
struct ConsoleAPI: Sendable {
    let store: WorkflowStore
    let types: WorkflowTypes
    let configuration: ConsoleConfiguration

    /// An answer: its status and JSON body.
    struct Answer: Sendable {
        let status: Int
        let body: [UInt8]

        static func json<T: Encodable>(_ value: T, status: Int = 200) -> Answer {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            do {
                return Answer(status: status, body: Array(try encoder.encode(value)))
            } catch {
                return failure(500, "the answer could not be encoded: \(error)")
            }
        }

        /// `{"error": {"status": N, "message": "..."}}`.
        static func failure(_ status: Int, _ message: String) -> Answer {
            struct Failure: Encodable {
                struct Detail: Encodable {
                    let status: Int
                    let message: String
                }
                let error: Detail
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let body = (try? encoder.encode(Failure(error: .init(status: status, message: message)))).map(Array.init) ?? Array("{}".utf8)
            return Answer(status: status, body: body)
        }
    }

    /// A request's query: its parameters by name.
    typealias Query = [String: String]

    // MARK: Endpoints

    /// `GET /api/store`: what the store is and holds.
    struct StoreSummary: Encodable {
        let location: String
        let backend: String
        let formatVersion: UInt32
        let instances: Int
        let logEntries: Int
        let snapshots: Int
        let usedBytes: Int?
        let capacityBytes: Int?
        /// The workflow types this console can rebuild state for (time travel, waits).
        let registeredTypes: [String]
        /// Whether the control verbs exist (`--allow-control`).
        let control: Bool
    }

    func store(_ query: Query) -> Answer {
        answering {
            let statistics = try store.statistics()
            return StoreSummary(
                location: Self.redacted(store.path), backend: statistics.backend, formatVersion: statistics.formatVersion,
                instances: statistics.instances, logEntries: statistics.logEntries, snapshots: statistics.snapshots,
                usedBytes: statistics.usedBytes, capacityBytes: statistics.capacityBytes, registeredTypes: types.names,
                control: configuration.allowControl)
        }
    }

    /// `GET /api/instances?status=&type=&version=&failed=&updatedSince=&after=&limit=`: a page of
    /// the listing (``WorkflowStore/instances(matching:after:limit:examiningAtMost:)``).
    func instances(_ query: Query) -> Answer {
        answering {
            var filter = InstanceFilter()
            if let status = query["status"], !status.isEmpty {
                guard let parsed = InstanceStatus(rawValue: status) else {
                    throw Refusal(400, "status \"\(status)\" is none of running, completed, failed, cancelled, paused, terminated")
                }
                filter.status = parsed
            }
            filter.workflowType = query["type"].flatMap { $0.isEmpty ? nil : $0 }
            if let version = query["version"], !version.isEmpty { filter.codeVersion = .some(version == "-" ? nil : version) }
            filter.failedWith = query["failed"].flatMap { $0.isEmpty ? nil : $0 }
            if let since = query["updatedSince"], !since.isEmpty { filter.updatedSince = try Reports.time(since, option: "updatedSince") }
            let limit = try Self.number(query["limit"], name: "limit", default: 50, in: 1...1_000)
            return try store.instances(matching: filter, after: query["after"].flatMap { $0.isEmpty ? nil : $0 }, limit: limit)
        }
    }

    /// `GET /api/summary`: how many instances of each status, and the running one that has
    /// waited longest.
    struct Summary: Encodable {
        /// Instances per status (every status, 0 where none).
        let counts: [String: Int]
        let total: Int
        /// When the running instance that has waited longest last changed (ISO 8601), and how
        /// many seconds ago; absent when none runs.
        let oldestRunningUpdated: String?
        let oldestRunningAgeSeconds: Double?
    }

    func summary(_ query: Query) -> Answer {
        answering {
            let summary = try store.instanceSummary()
            let oldest = summary.oldestRunningUpdate.map { WallTime(nanosecondsSinceEpoch: $0) }
            return Summary(
                counts: Dictionary(uniqueKeysWithValues: InstanceStatus.allCases.map { ($0.rawValue, summary.counts[$0] ?? 0) }),
                total: summary.total, oldestRunningUpdated: oldest.map(iso),
                oldestRunningAgeSeconds: oldest.map { Double(WallTime.now().nanosecondsSinceEpoch - $0.nanosecondsSinceEpoch) / 1e9 })
        }
    }

    /// `GET /api/rates`: the store's counters once a second over the last ten minutes (the page
    /// draws commits and entries per second from their differences).
    struct Rates: Encodable {
        let intervalSeconds: Double
        let samples: [ConsoleRates.Sample]
        /// Why there are no samples, where the store cannot give them.
        let unavailable: String?
    }

    static func rates(_ recent: (samples: [ConsoleRates.Sample], unavailable: String?)) -> Answer {
        .json(Rates(intervalSeconds: 1, samples: recent.samples, unavailable: recent.unavailable))
    }

    /// `GET /api/latency?minutes=N`: the engine's latency percentiles over the last N minutes
    /// (5 by default, at most 10), where the console runs inside the service with a
    /// ``ConsoleLatency``; elsewhere why there are none.
    struct Latency: Encodable {
        let minutes: Int
        let timers: [ConsoleLatency.Percentiles]
        let unavailable: String?
    }

    static func latency(_ latency: ConsoleLatency?, _ query: [String: String]) -> Answer {
        let minutes = max(1, min(10, query["minutes"].flatMap { Int($0) } ?? 5))
        guard let latency else {
            return .json(Latency(minutes: minutes, timers: [], unavailable:
                "the percentiles come from the engine's timers, in the service's own process: "
                    + "run the console inside the service with a ConsoleLatency (wfctl serve reads the store from outside)"))
        }
        return .json(Latency(minutes: minutes, timers: latency.percentiles(overLast: minutes * 60), unavailable: nil))
    }

    /// `GET /api/instances/{id}`: `describe`; for an instance whose replay fails, its record
    /// all the same, with `waitsError` saying why its waits are unknown.
    func instance(_ id: String) -> Answer {
        answering { try Reports.describe(store, id: id, types: types, despiteReplayFailure: true) }
    }

    /// A page of an instance's log.
    struct LogPage: Encodable {
        let entries: [Reports.LogLine]
        /// The sequence the next page starts at; `nil` at the log's end.
        let next: UInt64?
        let lastSequence: UInt64
    }

    /// `GET /api/instances/{id}/log?from=&limit=`: its entries from `from` (default 1).
    func log(_ id: String, _ query: Query) -> Answer {
        answering {
            let instance = try Reports.existing(store, id: id)
            let from = try Self.number(query["from"], name: "from", default: 1, in: 1...Int.max)
            let limit = try Self.number(query["limit"], name: "limit", default: 200, in: 1...5_000)
            guard UInt64(from) <= instance.lastSequence else {
                return LogPage(entries: [], next: nil, lastSequence: instance.lastSequence)
            }
            let through = min(instance.lastSequence, UInt64(from) + UInt64(limit) - 1)
            let entries = try store.entries(of: id, from: UInt64(from), through: through)
            return LogPage(entries: entries.map(Reports.logLine), next: through < instance.lastSequence ? through + 1 : nil,
                           lastSequence: instance.lastSequence)
        }
    }

    /// The state at a sequence, and what changed since another.
    struct StateAnswer: Encodable {
        let state: Reports.State
        let diff: Reports.StateDiff?
    }

    /// `GET /api/instances/{id}/state?at=N&diff=M`: the state tree at N (default: the last), and
    /// with `diff`, the changes from M to N field by field (as `wfctl state --at N --diff M`).
    func state(_ id: String, _ query: Query) -> Answer {
        answering {
            let at = try query["at"].flatMap { $0.isEmpty ? nil : $0 }.map { UInt64(try Self.number($0, name: "at", default: 0, in: 0...Int.max)) }
            let state = try Reports.state(store, id: id, at: at, types: types)
            guard let text = query["diff"], !text.isEmpty else { return StateAnswer(state: state, diff: nil) }
            let from = UInt64(try Self.number(text, name: "diff", default: 0, in: 0...Int.max))
            let before = try Reports.state(store, id: id, at: from, types: types)
            return StateAnswer(state: state, diff: Reports.diff(from: before, to: state))
        }
    }

    /// `GET /api/signals`: every signal record (an empty list when the store has none).
    func signals(_ query: Query) -> Answer {
        answering {
            guard let center = try openSignals(store) else { return [Reports.SignalRecord]() }
            defer { try? center.stop() }
            return try Reports.signals(center)
        }
    }

    /// `GET /api/signals/{id}` (a UUID, or `?stableName=` with any id): its versions, consumers
    /// and pending deliveries.
    func signal(_ text: String, _ query: Query) -> Answer {
        answering {
            let id: SignalID
            if let name = query["stableName"], !name.isEmpty {
                id = SignalID(stableName: name)
            } else {
                guard let parsed = SignalID(text) else { throw Refusal(400, "\"\(text)\" is not a signal id (a UUID)") }
                id = parsed
            }
            guard let center = try openSignals(store) else { throw Refusal(404, "the store has no signals") }
            defer { try? center.stop() }
            return try Reports.signal(id, in: center)
        }
    }

    // MARK: Control (only with --allow-control)

    /// The body of `POST /api/instances/{id}/control`.
    struct ControlBody: Decodable {
        /// cancel, terminate, pause, unpause, delete, resume or fork.
        let verb: String
        /// Why (kept with the request and, for cancel and terminate, in the log).
        let reason: String?
        /// For fork: the last sequence the copy keeps, and its id.
        let at: UInt64?
        let newID: String?

        enum CodingKeys: String, CodingKey {
            case verb, reason, at
            case newID = "as"
        }
    }

    /// `POST /api/instances/{id}/control` `{"verb": "pause", "reason": "..."}`: the verb as `wfctl
    /// pause STORE ID` applies it (recorded in the store, answered by the host that runs the
    /// instance, or applied here when none does); answers with the host's answer.
    func control(_ id: String, body: [UInt8]) -> Answer {
        guard configuration.allowControl else { return .failure(404, "this console was started without --allow-control") }
        guard let request = try? JSONDecoder().decode(ControlBody.self, from: Data(body)) else {
            return .failure(400, "the body must be JSON: {\"verb\": \"pause\", \"reason\": \"...\"}")
        }
        if request.verb == "resume" { return answering { try resume(id) } }
        if request.verb == "fork" { return answering { try fork(id, at: request.at, as: request.newID) } }
        guard let verb = ControlVerb(rawValue: request.verb) else {
            return .failure(400, "verb \"\(request.verb)\" is none of \((ControlVerb.allCases.map(\.rawValue) + ["resume", "fork"]).joined(separator: ", "))")
        }
        return answering {
            _ = try Reports.existing(store, id: id)
            let reason = request.reason.flatMap { $0.isEmpty ? nil : $0 }
            return try store.control(verb, id: id, reason: reason, deadline: verb == .cancel ? .seconds(60) : nil, timeout: .seconds(10),
                                     requestedBy: Self.requester)
        }
    }

    /// Who asks, in the requests the console records: the console of this process.
    static let requester = "the console (wfctl serve, pid \(getpid()))"

    /// The body of `POST /api/signals/post`: as `wfctl signal post` takes it.
    struct SignalPostBody: Decodable {
        /// The signal's id (a UUID), or
        let signal: String?
        /// the stable name its id is made from.
        let stableName: String?
        /// The version's value.
        let value: JSONValue
        /// Keep the consumers that receive this version (default: each is removed after it).
        let keepConsumers: Bool?
        /// Makes the post happen once: a repeat with the same key answers with the first's version.
        let idempotencyKey: String?
    }

    /// What a post made: as `wfctl signal post --json` prints it.
    struct Posted: Encodable {
        let signal: String
        let name: String?
        let version: UInt64
    }

    /// `POST /api/signals/post`: a version of a signal, as `wfctl signal post` posts it.
    func postSignal(body: [UInt8]) -> Answer {
        guard configuration.allowControl else { return .failure(404, "this console was started without --allow-control") }
        let request: SignalPostBody
        do {
            request = try JSONDecoder().decode(SignalPostBody.self, from: Data(body))
        } catch {
            return .failure(400, "the body must be JSON: {\"signal\": \"UUID\" or \"stableName\": \"NAME\", \"value\": ..., \"keepConsumers\": false, \"idempotencyKey\": \"...\"}")
        }
        return answering {
            let signal: SignalID
            switch (request.signal.flatMap { $0.isEmpty ? nil : $0 }, request.stableName.flatMap { $0.isEmpty ? nil : $0 }) {
            case (let text?, nil):
                guard let id = SignalID(text) else { throw Refusal(400, "\"\(text)\" is not a signal id (a UUID)") }
                signal = id
            case (nil, let name?): signal = SignalID(stableName: name)
            default: throw Refusal(400, "give the signal's id or its stable name, one of them")
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let payload = Array(try encoder.encode(request.value))
            let center = try SignalCenter.open(store: store, processIdentity: "wfctl-serve-\(getpid())", configuration: .init(pollInterval: .seconds(3600)))
            defer { try? center.stop() }
            let version = try center.post([SignalPost(
                signal: signal, payload: payload, terminatesConsumersAfterDelivery: !(request.keepConsumers ?? false),
                idempotencyKey: request.idempotencyKey.flatMap { $0.isEmpty ? nil : $0 })])[0]
            return Posted(signal: signal.description, name: request.stableName, version: version)
        }
    }

    /// What `resume` or `fork` did, to which instance (for fork: the new one).
    struct Changed: Encodable {
        let instance: String
        let verb: String
        /// resumed (it replays and runs again: a service adopts it), or forked.
        let outcome: String
        let detail: String
        let record: InstanceInfo?
    }

    /// `fork` (as `wfctl fork STORE ID --at N --as NEWID`): a paused copy whose log is the
    /// instance's first `at` entries; nothing runs it until it is unpaused.
    private func fork(_ id: String, at: UInt64?, as newID: String?) throws -> Changed {
        let instance = try Reports.existing(store, id: id)
        guard let at, (1...instance.lastSequence).contains(at) else {
            throw Refusal(400, "fork needs \"at\": a sequence from 1 to \(instance.lastSequence)")
        }
        guard let newID, !newID.isEmpty else { throw Refusal(400, "fork needs \"as\": the new instance's id") }
        if try store.instance(id: newID) != nil { throw Refusal(409, "\"\(newID)\" exists already") }
        try store.fork(id: id, at: at, as: newID, into: nil, replacing: nil)
        return Changed(instance: newID, verb: "fork", outcome: "forked",
                       detail: "a paused copy of \(id) at sequence \(at): unpause runs it", record: try store.instance(id: newID))
    }

    /// `resume` (as `wfctl resume STORE ID`): a failed instance is replayed here, read-only, and
    /// marked running when it replays (a running service then adopts it); one that still does
    /// not replay stays failed and the answer (409) says why.
    private func resume(_ id: String) throws -> Changed {
        let instance = try Reports.existing(store, id: id)
        guard instance.status == .failed else {
            throw Refusal(409, "\"\(id)\" is \(instance.status.rawValue): only a failed instance is resumed")
        }
        let report = try Reports.registeredSupport(store: store, id: id, types: types).verify(store, id, true)
        if let problem = report.problem { throw Refusal(409, "\"\(id)\" still does not replay: \(problem)") }
        try store.markRunning(id: id)
        return Changed(instance: id, verb: "resume", outcome: "resumed", detail: "it replays: a running service picks it up, or its next start does",
                       record: try store.instance(id: id))
    }

    // MARK: Errors

    /// A request the API refuses, with its status.
    struct Refusal: Error {
        let status: Int
        let message: String

        init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }
    }

    /// Runs an endpoint: its value as JSON, or its error with the status that fits: 400 for a
    /// bad parameter, 404 for what is not there, 500 for a store that failed.
    private func answering<T: Encodable>(_ body: () throws -> T) -> Answer {
        do {
            return .json(try body())
        } catch let refusal as Refusal {
            return .failure(refusal.status, refusal.message)
        } catch let error as DurableError where error.kind == .controlNotAnswered {
            // Recorded, not answered in time: the host applies it when it can.
            return .failure(504, error.description)
        } catch let error as DurableError where [.storeBusy, .busy, .unavailable].contains(error.storageFailure?.kind) {
            return .failure(503, error.description)
        } catch {
            let failure = ToolError.from(error)
            switch failure.code {
            case 2 where failure.message.hasPrefix("no instance") || failure.message.contains("not found"): return .failure(404, failure.message)
            case 1, 2: return .failure(400, failure.message)
            default: return .failure(500, failure.message)
            }
        }
    }

    /// An integer parameter in `range`, or `fallback` when absent.
    private static func number(_ text: String?, name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text, !text.isEmpty else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw Refusal(400, "\(name) must be a whole number from \(range.lowerBound)\(range.upperBound == Int.max ? " up" : " to \(range.upperBound)"), not \"\(text)\"")
        }
        return value
    }

    /// A store's location without a password (`postgres://user:secret@host` → `postgres://user@host`).
    static func redacted(_ location: String) -> String {
        guard let scheme = location.range(of: "://"), let at = location.range(of: "@", range: scheme.upperBound..<location.endIndex) else {
            return location
        }
        let credentials = location[scheme.upperBound..<at.lowerBound]
        guard let colon = credentials.firstIndex(of: ":") else { return location }
        return String(location[..<colon]) + String(location[at.lowerBound...])
    }
}
