#if Postgres
import PostgresNIO
import WorkflowStorage

extension PostgresStorage {
    /// `error` (from postgres-nio, NIO or the store's own checks) as a ``StorageFailure`` of
    /// `operation`, by SQLSTATE for the server's errors; the driver's error is the underlying one.
    func storageFailure(_ error: any Error, operation: String) -> StorageFailure {
        if error is PostgresConnections.Closed {
            return failure(.closed, operation, "the store was closed in this process (WorkflowStore.close())",
                           recovery: "Open the store again to use it")
        }
        if let damaged = error as? DamagedRow {
            return failure(.corrupted, operation, damaged.detail, recovery: "Restore the database from a backup")
        }
        if let error = error as? PostgresDecodingError {
            return failure(.incompatible, operation, "a column does not hold what this library expects (\(error.code))",
                           recovery: "Check that the schema belongs to a workflow store", underlying: error)
        }
        if let standbys = error as? PostgresConnections.NoPrimary {
            return failure(.unavailable, operation, standbys.description,
                           recovery: "Promote a standby (or let the failover finish): the store's next connection goes to the new primary")
        }
        if let lost = error as? ConnectionLost {
            return failure(.unavailable, operation, lost.description,
                           recovery: "Check that the PostgreSQL server at \(configuration.serverList) runs and accepts connections; a stopped instance resumes from what was committed",
                           underlying: lost)
        }
        guard let error = error as? PSQLError else {
            return failure(.unavailable, operation, "cannot reach the server: \(error)",
                           recovery: "Check that the PostgreSQL server at \(configuration.serverList) runs and accepts connections")
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            return failure(.unavailable, operation, "the connection to the server failed (\(error.code))",
                           recovery: "Check that the PostgreSQL server at \(configuration.serverList) runs and accepts connections",
                           underlying: error)
        }
        let message = error.serverInfo?[.message] ?? "no message"
        let detail = "\(message) (SQLSTATE \(state))"
        // A statement the schema does not take (an undefined procedure, other arguments): a newer
        // library may have migrated the store while this process ran.
        if state.hasPrefix("42"), let format = storedFormat(), format > PostgresSchema.format {
            return failure(
                .newerFormat, operation, "\(detail): the store was migrated to format \(format) while this process ran format \(PostgresSchema.format)",
                recovery: "Stop this process and start it with the newer library (upgrade a store's hosts together)", underlying: error)
        }
        let (kind, recovery): (StorageFailure.Kind, String) = switch state {
        case "WF001": (.invalidInput, "")
        // A key taken: in a commit, entries of a sequence another commit wrote (the log's key).
        case "23505": (.invalidInput, "")
        case "53100": (.full, "Free disk space on the database server")
        case "53300": (.busy, "The server has no free connection: lower `maximumConnections` or raise the server's `max_connections`")
        case "3D000": (.notFound, "Create the database, or name one that exists")
        case "25006": (.readOnly, "The server accepts no writes (a standby, or read-only): connect to the primary")
        case "40001", "40P01": (.busy, "Another transaction conflicted with this one: retry")
        case "57P01", "57P02", "57P03": (.unavailable, "The server is shutting down or starting: retry when it accepts connections")
        case "XX001", "XX002": (.corrupted, "The server reports damaged data: restore the database from a backup")
        default:
            state.hasPrefix("22") ? (.invalidInput, "")
                : state.hasPrefix("28") ? (.other, "Check the user name and password")
                : state.hasPrefix("42") ? (.incompatible, "The store's schema is not what this library expects: check the schema name")
                : state.hasPrefix("08") ? (.unavailable, "Check that the server runs and accepts connections")
                : (.other, "")
        }
        return failure(kind, operation, detail, recovery: recovery, underlying: error)
    }

    /// The store's format as the server has it now; `nil` when it cannot be read.
    private func storedFormat() -> Int64? {
        try? connections.with { connection in try format(on: connection) }
    }
}
#endif
