#if Postgres
import Dispatch
import Logging
import PostgresNIO
import WorkflowLocks

/// The driver never answered a query because its connection closed under it.
///
/// postgres-nio 1.33 hands a query to its channel without a write promise: a query sent just as
/// the server closes the connection (a terminated backend, a restart) can be dropped with its
/// promise never completed, and a thread waiting for it would wait forever. Whether such a write
/// reached the server is unknown.
struct ConnectionLost: Error, CustomStringConvertible {
    var description: String { "the connection closed before the server's answer arrived (a write's outcome is unknown)" }
}

extension PostgresConnection {
    /// How long a query may stay unanswered once its connection is closed: the driver fails the
    /// queries it knows of as soon as it sees the close, so this only ends waits for dropped ones.
    static let answerGraceAfterClose: Duration = .milliseconds(250)

    /// Runs `query` and returns every row (read to the end, so that a statement has completed,
    /// and committed if it commits, when this returns), blocking the calling thread. Throws the
    /// driver's error, or ``ConnectionLost`` when the connection closed and the driver dropped
    /// the query.
    func answer(to query: PostgresQuery, logger: Logger) throws -> [PostgresRow] {
        let answered = DispatchSemaphore(value: 0)
        let outcome = Lock<Result<[PostgresRow], any Error>?>(nil)
        self.query(query, logger: logger).whenComplete { result in
            outcome.withLock { $0 = result.map { Array($0.rows) } }
            answered.signal()
        }
        var closedAt: ContinuousClock.Instant?
        while answered.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            guard isClosed else { continue }
            let since = closedAt ?? .now
            closedAt = since
            if ContinuousClock.now - since >= Self.answerGraceAfterClose { throw ConnectionLost() }
        }
        return try outcome.withLock { $0 }!.get()
    }
}
#endif
