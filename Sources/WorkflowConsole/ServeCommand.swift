import ArgumentParser
import DurableWorkflow
import Foundation
import WorkflowLocks
import WorkflowCLI

/// `wfctl serve STORE [--host ADDRESS] [--port N] [--token TOKEN] [--allow-control]`
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a console in the browser over a store: instances, timelines, time travel with a diff, signals.",
        discussion: """
        Read-only and safe against a running service, as the read commands are. Binds to 127.0.0.1 unless
        --host says otherwise; any other address needs --token, which every request must then carry
        (open the page as http://HOST:PORT/?token=TOKEN). The JSON API is under /api/ (docs/console.md).
        Example: wfctl serve /var/lib/service/workflows --port 8642
        """)

    @Argument(help: "The store: its directory, or a postgres:// URL with ?schema=NAME (in a wfctl built with the Postgres trait).")
    var store: String

    @Option(help: "The address to listen on (anything but loopback needs --token).")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port, printed at start).")
    var port = 8642

    @Option(help: "A token every request must carry (Authorization: Bearer TOKEN, or /?token=TOKEN for the page).")
    var token: String?

    @Flag(help: "Let the console change instances (cancel, pause, ...); needs --token.")
    var allowControl = false

    func run() throws {
        let configuration = ConsoleConfiguration(host: host, port: port, token: token, allowControl: allowControl)
        do {
            try configuration.validate()
        } catch {
            throw ToolError.usage(error.description)
        }
        let console = try WorkflowConsole(store: try openStore(store, readOnly: !allowControl), types: WorkflowTool.types,
                                          configuration: configuration)
        let finished = DispatchSemaphore(value: 0)
        let outcome = ConsoleOutcome()
        Task {
            do {
                try await console.run(gracefulShutdown: true) { host, port in
                    let shown = host.contains(":") ? "[\(host)]" : host
                    let query = configuration.token == nil ? "" : "?token=…"
                    FileHandle.standardOutput.write(Data(
                        "wfctl serve: the console of \(ConsoleAPI.redacted(store)) at http://\(shown):\(port)/\(query) (Ctrl-C stops it)\n".utf8))
                }
            } catch {
                outcome.fail(error)
            }
            finished.signal()
        }
        finished.wait()
        if let error = outcome.error {
            throw ToolError(code: 3, message: "the console stopped: \(error)")
        }
    }
}

/// How the server task ended, read by the command's thread once it signalled.
private final class ConsoleOutcome: Sendable {
    private let stored = Lock<(any Error)?>(nil)
    func fail(_ error: any Error) { stored.withLock { $0 = error } }
    var error: (any Error)? { stored.withLock { $0 } }
}

/// `wfctl` with its console: the shipped tool's entry point (`WorkflowTool.main(types:)` is the
/// same without `serve`, for a service's own tool that should compile no HTTP server).
public enum WorkflowConsoleTool {
    /// Parses `arguments`, runs the command (any of `wfctl`'s, or `serve`) and exits with its code.
    /// As `WorkflowTool.main(types:)`, on an LMDB store in a child process of this executable.
    public static func main(types: WorkflowTypes, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        if let code = GuardedRun.exitCode(of: arguments) { exit(code) }
        exit(run(types: types, arguments: arguments))
    }

    /// Runs one command and returns its exit code, without exiting.
    public static func run(types: WorkflowTypes, arguments: [String]) -> Int32 {
        WorkflowTool.$types.withValue(types) { WorkflowTool.run(arguments, root: WFCtlWithConsole.self) }
    }
}

/// `wfctl`'s root command with `serve` among its subcommands.
struct WFCtlWithConsole: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: WFCtl.configuration.commandName, abstract: WFCtl.configuration.abstract,
        discussion: WFCtl.configuration.discussion, subcommands: WFCtl.configuration.subcommands + [Serve.self])
}
