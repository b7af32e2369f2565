/// What an operator asks of a running instance (rule O2): recorded in the store, applied by the
/// process whose host runs the instance (wherever it runs), and answered there.
public enum ControlVerb: String, Sendable, Hashable, Codable, CaseIterable {
    /// Hand the instance's workflows a cancel request: they clean up and end it as cancelled (or
    /// the request's deadline does).
    case cancel
    /// End the instance at once.
    case terminate
    /// Apply no action and fire no timer until unpaused.
    case pause
    case unpause
    /// Stop the instance's host and delete the instance.
    case delete
}

/// A control request to record (``StorageBackend/postControlRequests(_:)``).
public struct NewControlRequest: Sendable, Hashable {
    /// The instance it is for.
    public var instance: String
    public var verb: ControlVerb
    /// Why, as the requester said.
    public var reason: String?
    /// For a cancel: how long the workflows get before the instance is ended anyway, in
    /// nanoseconds from when the request is applied (`nil`: no deadline).
    public var deadline: Int64?
    /// Who asked (`wfctl on host-a, pid 4711`).
    public var requestedBy: String
    /// When, in nanoseconds since 1970.
    public var requested: Int64

    public init(instance: String, verb: ControlVerb, reason: String?, deadline: Int64?, requestedBy: String, requested: Int64) {
        self.instance = instance
        self.verb = verb
        self.reason = reason
        self.deadline = deadline
        self.requestedBy = requestedBy
        self.requested = requested
    }
}

/// A control request as the store holds it: numbered within its instance, from 1, in the order
/// they were recorded (a number is visible only after every lower one of its instance).
public struct StoredControlRequest: Sendable, Hashable {
    public var instance: String
    public var number: UInt64
    public var request: NewControlRequest
    /// `nil` until answered.
    public var answer: ControlAnswerRecord?

    public init(instance: String, number: UInt64, request: NewControlRequest, answer: ControlAnswerRecord?) {
        self.instance = instance
        self.number = number
        self.request = request
        self.answer = answer
    }
}

/// What became of a control request.
public struct ControlAnswerRecord: Sendable, Hashable {
    /// How it went.
    public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
        /// Applied: logged as the entry at ``ControlAnswerRecord/sequence`` (or, for a delete, done).
        case applied
        /// Nothing to do: the instance was already as asked, or the request was applied before.
        case unchanged
        /// Not applied (``ControlAnswerRecord/detail`` says why).
        case refused
    }

    public var outcome: Outcome
    /// The log entry that applied it, when one did.
    public var sequence: UInt64?
    /// Why, in a few words.
    public var detail: String
    /// Who answered (`host of pid 4711 on host-a`, `wfctl: no live host ran it`).
    public var answeredBy: String
    /// When, in nanoseconds since 1970.
    public var answered: Int64

    public init(outcome: Outcome, sequence: UInt64?, detail: String, answeredBy: String, answered: Int64) {
        self.outcome = outcome
        self.sequence = sequence
        self.detail = detail
        self.answeredBy = answeredBy
        self.answered = answered
    }
}

/// How long a store keeps the control requests it answered: a week, except each instance's last
/// one (numbers go on from it). Stores drop the others as new requests come.
public enum ControlRequestRetention {
    /// A week, in nanoseconds.
    public static let answeredFor: Int64 = 7 * 24 * 3600 * 1_000_000_000

    /// Whether `request`, answered, may be dropped at `now` (nanoseconds since 1970), unless it is
    /// its instance's last.
    public static func expired(_ request: StoredControlRequest, now: Int64) -> Bool {
        guard let answer = request.answer else { return false }
        return now - answer.answered > answeredFor
    }
}
