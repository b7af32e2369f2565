#if Postgres
import Foundation
import PostgresNIO
import WorkflowStorage

/// Control requests (rule O2) in `wf_control`, one row each, keyed by instance id and number.
extension PostgresStorage {
    static let controlColumns =
        "instance_id, number, verb, reason, deadline_ns, requested_by, requested_ns, outcome, answer_seq, detail, answered_by, answered_ns"

    public func postControlRequests(_ requests: [NewControlRequest]) throws(StorageFailure) -> [StoredControlRequest?] {
        var posted: [StoredControlRequest?] = []
        for request in requests {
            posted.append(try post(request))
        }
        return posted
    }

    /// Records `request` as its instance's next one (a post that races another of the same
    /// instance for a number is made again); `nil` when the instance does not exist.
    private func post(_ request: NewControlRequest) throws(StorageFailure) -> StoredControlRequest? {
        for _ in 0..<20 {
            do {
                let number = try write("post a control request") { connection -> Int64? in
                    // Old answers go; the last request stays, so that numbers go on from it.
                    _ = try self.rows(
                        """
                        DELETE FROM \(unescaped: self.schema).wf_control
                         WHERE instance_id = \(request.instance) AND outcome IS NOT NULL
                           AND answered_ns < \(request.requested - ControlRequestRetention.answeredFor)
                           AND number < (SELECT max(number) FROM \(unescaped: self.schema).wf_control WHERE instance_id = \(request.instance))
                        """, on: connection)
                    let rows = try self.rows(
                        """
                        INSERT INTO \(unescaped: self.schema).wf_control
                               (instance_id, number, verb, reason, deadline_ns, requested_by, requested_ns)
                        SELECT \(request.instance),
                               COALESCE((SELECT max(number) FROM \(unescaped: self.schema).wf_control WHERE instance_id = \(request.instance)), 0) + 1,
                               \(request.verb.rawValue), \(request.reason), \(request.deadline), \(request.requestedBy), \(request.requested)
                         WHERE EXISTS (SELECT 1 FROM \(unescaped: self.schema).wf_instance WHERE id = \(request.instance))
                        RETURNING number
                        """, on: connection)
                    return try rows.first?.decode(Int64.self)
                }
                return number.map { StoredControlRequest(instance: request.instance, number: UInt64($0), request: request, answer: nil) }
            } catch let failure where (failure.underlying as? PSQLError)?.serverInfo?[.sqlState] == "23505" {
                // Another post of the instance took the number: take the next one.
                continue
            }
        }
        throw failure(.busy, "post a control request", "concurrent posts to instance \(request.instance) kept taking its next number",
                      recovery: "Post the request again")
    }

    public func pendingControlRequests() throws(StorageFailure) -> [StoredControlRequest] {
        try run("read control requests") { connection -> [StoredControlRequest] in
            try self.rows(
                """
                SELECT \(unescaped: Self.controlColumns) FROM \(unescaped: self.schema).wf_control
                 WHERE outcome IS NULL ORDER BY instance_id COLLATE "C", number
                """, on: connection
            ).map { try self.controlRequest($0) }
        }
    }

    public func controlRequests(of id: String) throws(StorageFailure) -> [StoredControlRequest] {
        try run("read control requests") { connection -> [StoredControlRequest] in
            try self.rows(
                """
                SELECT \(unescaped: Self.controlColumns) FROM \(unescaped: self.schema).wf_control
                 WHERE instance_id = \(id) ORDER BY number
                """, on: connection
            ).map { try self.controlRequest($0) }
        }
    }

    public func answerControlRequest(instance id: String, number: UInt64, answer: ControlAnswerRecord) throws(StorageFailure) -> Bool {
        let sequence = answer.sequence.map { Int64(bitPattern: $0) }
        let answered = try write("answer a control request") { connection -> Bool in
            let rows = try self.rows(
                """
                UPDATE \(unescaped: self.schema).wf_control
                   SET outcome = \(answer.outcome.rawValue), answer_seq = \(sequence), detail = \(answer.detail),
                       answered_by = \(answer.answeredBy), answered_ns = \(answer.answered)
                 WHERE instance_id = \(id) AND number = \(Int64(bitPattern: number)) AND outcome IS NULL
                RETURNING number
                """, on: connection)
            return !rows.isEmpty
        }
        return answered
    }

    public func holderIsAlive(_ instance: StoredInstance) throws(StorageFailure) -> Bool? {
        guard let (stored, holder) = try ownership(of: instance.id), !stored.claim.isNone else { return false }
        switch holder {
        case .otherMachine: return true
        case .expired: return false
        case .thisProcess, .thisMachine, .unknown: return nil
        }
    }

    /// A row of ``controlColumns``.
    private func controlRequest(_ row: PostgresRow) throws -> StoredControlRequest {
        let columns = row.makeRandomAccess()
        let instance = try columns[0].decode(String.self), number = try columns[1].decode(Int64.self)
        let verb = try columns[2].decode(String.self), reason = try columns[3].decode(String?.self)
        let deadline = try columns[4].decode(Int64?.self), requestedBy = try columns[5].decode(String.self)
        let requested = try columns[6].decode(Int64.self)
        let outcome = try columns[7].decode(String?.self), sequence = try columns[8].decode(Int64?.self)
        let detail = try columns[9].decode(String?.self), answeredBy = try columns[10].decode(String?.self)
        let answered = try columns[11].decode(Int64?.self)
        guard let verb = ControlVerb(rawValue: verb) else { throw DamagedRow(detail: "control request \(instance)#\(number) has the verb \(verb)") }
        var answer: ControlAnswerRecord?
        if let outcome {
            guard let outcome = ControlAnswerRecord.Outcome(rawValue: outcome) else {
                throw DamagedRow(detail: "control request \(instance)#\(number) has the outcome \(outcome)")
            }
            answer = ControlAnswerRecord(outcome: outcome, sequence: sequence.map { UInt64(bitPattern: $0) }, detail: detail ?? "",
                                         answeredBy: answeredBy ?? "", answered: answered ?? 0)
        }
        let request = NewControlRequest(instance: instance, verb: verb, reason: reason, deadline: deadline, requestedBy: requestedBy,
                                        requested: requested)
        return StoredControlRequest(instance: instance, number: UInt64(number), request: request, answer: answer)
    }
}
#endif
