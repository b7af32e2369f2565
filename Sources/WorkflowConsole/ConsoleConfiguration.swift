/// How `wfctl serve` (``WorkflowConsole``) listens and who may use it.
public struct ConsoleConfiguration: Sendable, Hashable {
    /// The address to bind: loopback (`127.0.0.1`) unless told otherwise. Any other address
    /// needs a ``token``.
    public var host: String
    /// The port; 0 takes a free one (``WorkflowConsole/run(onListening:)`` says which).
    public var port: Int
    /// When set, every request must carry it (`Authorization: Bearer TOKEN`, or `?token=TOKEN`
    /// for the page itself); without it, 401.
    public var token: String?
    /// Whether the control verbs (cancel, terminate, pause, unpause, resume, signal, fork) exist
    /// at all; they also need a ``token``.
    public var allowControl: Bool

    public init(host: String = "127.0.0.1", port: Int = 8642, token: String? = nil, allowControl: Bool = false) {
        self.host = host
        self.port = port
        self.token = token
        self.allowControl = allowControl
    }

    /// Whether ``host`` is a loopback address, reachable from this machine alone.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Refuses what would expose a store: another address than loopback without a token, control
    /// without a token, an empty token, a port out of range.
    public func validate() throws(ConsoleError) {
        if let token, token.isEmpty { throw ConsoleError(.invalidConfiguration, "an empty --token lets anyone in", recovery: "Give a token of 16 characters or more") }
        if !isLoopback, token == nil {
            throw ConsoleError(
                .invalidConfiguration, "--host \(host) is reachable from other machines, and no --token was given",
                recovery: "Give --token TOKEN (every request must then carry it), or leave --host at 127.0.0.1")
        }
        if allowControl, token == nil {
            throw ConsoleError(
                .invalidConfiguration, "--allow-control lets the console change instances, and no --token was given",
                recovery: "Give --token TOKEN with --allow-control")
        }
        if !(0...65_535).contains(port) { throw ConsoleError(.invalidConfiguration, "--port \(port) is not a port", recovery: "Give 0 to 65535") }
    }
}
