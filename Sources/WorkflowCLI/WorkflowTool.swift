import ArgumentParser
#if Postgres
import WorkflowPostgres
#endif
import DurableWorkflow
import Foundation
import WorkflowLMDB
import WorkflowSignals

/// The inspect/replay tool over a workflow store. A service builds its own `wfctl` in a few
/// lines, with its workflow types registered so that `state` and `verify` can rebuild them:
///
///     var types = WorkflowTypes()
///     types.register(OrderWorkflow.self, configuration: OrderWorkflow.configuration)
///     WorkflowTool.main(types: types)
///
/// Exit codes: 0 ok, 1 a finding (e.g. a divergence), 2 a usage problem, 3 a store problem.
/// Read commands open the store read-only, so they are safe against a running service.
public enum WorkflowTool {
    @TaskLocal package static var types = WorkflowTypes()

    /// Parses `arguments`, runs the command and exits with its code; errors are one line on stderr.
    /// On an LMDB store the command runs in a child process of this executable, so that a
    /// damaged page that stops the process reading it is reported as a finding (see `GuardedRun`).
    public static func main(types: WorkflowTypes, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        if let code = GuardedRun.exitCode(of: arguments) { exit(code) }
        exit($types.withValue(types) { run(arguments) })
    }

    /// Runs one command with `types` registered and returns its exit code, without exiting
    /// (for tests, and tools that embed `wfctl`'s commands).
    public static func run(types: WorkflowTypes, arguments: [String]) -> Int32 {
        $types.withValue(types) { run(arguments) }
    }

    /// Runs one command of `root` (by default `wfctl`'s own; the console adds `serve`) and
    /// returns its exit code (for tests and embedding).
    package static func run(_ arguments: [String], root: any ParsableCommand.Type = WFCtl.self) -> Int32 {
        do {
            var command = try root.parseAsRoot(arguments)
            try command.run()
            return 0
        } catch {
            return report(error, asJSON: arguments.contains("--json"), root: root)
        }
    }

    /// The JSON shape of an error (with `--json`, on standard output).
    package struct ErrorReport: Codable {
        struct Detail: Codable {
            let exitCode: Int32
            let message: String
        }
        let error: Detail
    }

    /// Prints what `error` says where it belongs and returns the exit code: help (asked for with
    /// `--help`, `help` or no command) to stdout with 0; a usage error with its message to stderr
    /// with 2; anything else as ``ToolError`` maps it.
    private static func report(_ error: any Error, asJSON: Bool, root: any ParsableCommand.Type) -> Int32 {
        if !(error is ToolError) {
            switch root.exitCode(for: error) {
            case .success:
                emit(root.fullMessage(for: error))
                return 0
            case .validationFailure:
                FileHandle.standardError.write(Data((root.fullMessage(for: error) + "\n").utf8))
                return 2
            default:
                break
            }
        }
        let failure = ToolError.from(error)
        let message = failure.message.replacingOccurrences(of: "\n", with: " ")
        // A finding (exit 1) follows the report the command printed, which says it: its summary
        // line stays on stderr, so that standard output holds one JSON document.
        if asJSON, !failure.followsReport, let text = try? json(ErrorReport(error: .init(exitCode: failure.code, message: message))) {
            emit(text)
        } else {
            FileHandle.standardError.write(Data("wfctl: \(message)\n".utf8))
        }
        return failure.code
    }
}

/// The root command.
package struct WFCtl: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "wfctl",
        abstract: "Inspect, replay and maintain a durable workflow store.",
        discussion: """
        Read commands open the store read-only and are safe against a running service.
        Exit codes: 0 ok, 1 finding (e.g. a divergence), 2 usage, 3 store error; `verify --gate`: 10 to 13, its worst outcome.
        """,
        subcommands: [Info.self, List.self, Describe.self, Log.self, State.self, Verify.self, Check.self, CheckWalk.self, Signals.self,
                      SignalCommand.self, Cancel.self, Terminate.self, Pause.self, Unpause.self, Delete.self, Resume.self, Export.self, Import.self, Compact.self, Fork.self,
                      Markers.self])
}

/// Options every read command takes.
struct ReadOptions: ParsableArguments {
    @Argument(help: "The store: its directory, or a postgres:// URL with ?schema=NAME (in a wfctl built with the Postgres trait).")
    var store: String

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func open() throws -> WorkflowStore {
        try openStore(store, readOnly: true)
    }
}

/// The store at `location`: an LMDB directory, or a `postgres://` URL (when the tool was built
/// with the package's Postgres trait).
package func openStore(_ location: String, readOnly: Bool) throws -> WorkflowStore {
    if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
        #if Postgres
        guard var configuration = PostgresConfiguration(url: location) else {
            throw ToolError.usage("\(location) is not a PostgreSQL URL: postgres://user[:password]@host[:port]/database?schema=name")
        }
        configuration.readOnly = readOnly
        return try WorkflowStore.open(configuration)
        #else
        throw ToolError.usage("this wfctl was built without PostgreSQL: build it with `--traits Postgres`")
        #endif
    }
    return try WorkflowStore.open(path: location, configuration: readOnly ? .readOnly : StoreConfiguration())
}

/// Opens the signal subsystem of a store read-only; `nil` when the store has never had signals.
package func openSignals(_ store: WorkflowStore) throws -> SignalCenter? {
    do {
        return try SignalCenter.open(store: store, processIdentity: "wfctl-\(getpid())", configuration: .init(pollInterval: .seconds(3600)))
    } catch let error as SignalError where error.storageFailure?.kind == .notFound {
        return nil
    }
}
