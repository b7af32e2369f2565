#if Postgres
/// `error`'s debug description on one line: the driver's spreads the server's message and its
/// context over several, and a log message is one line (log readers, collectors and the host
/// tests read a line per event).
func loggedError(_ error: any Error) -> String {
    String(reflecting: error).split(whereSeparator: \.isNewline).joined(separator: " ")
}
#endif
