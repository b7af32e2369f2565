/// A console that cannot start, or a request it cannot answer: what, and what to do.
public struct ConsoleError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        /// The configuration would expose the store (see ``ConsoleConfiguration/validate()``).
        case invalidConfiguration
        /// The store could not be opened.
        case storeUnavailable
        /// The address could not be bound (in use, not this machine's).
        case cannotListen
    }

    public let kind: Kind
    public let detail: String
    public let recovery: String

    public init(_ kind: Kind, _ detail: String, recovery: String) {
        self.kind = kind
        self.detail = detail
        self.recovery = recovery
    }

    public var description: String { "\(detail). \(recovery)." }
}
