import ArgumentParser
import DurableWorkflow
import Foundation
import WorkflowSignals

/// `wfctl signal post STORE SIGNAL JSON`
struct SignalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signal", abstract: "Act on signals (see `signals` to read them).", subcommands: [Post.self])

    struct Post: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Post a version of a signal, its value given as JSON (as SignalCenter.post(_:value:) encodes values).",
            discussion: """
            The signal is named by its id, or with --stable-name by the name its id is made from (SignalID(stableName:)).
            Example: wfctl signal post /var/lib/service/workflows 6F9619FF-8B86-D011-B42D-00C04FC964FF '{"carrier":"DHL"}'
            Example: wfctl signal post /var/lib/service/workflows --stable-name settlement:pay-3 '{"settled":true}'
            """)

        @OptionGroup var options: WriteOptions

        @Argument(help: "The signal's id (a UUID), then the value as JSON text; with --stable-name, the value alone.")
        var arguments: [String]

        @Option(help: "The stable name the signal's id is made from, instead of its id.")
        var stableName: String?

        @Flag(help: "Keep the consumers that receive this version (default: each is removed after delivering it).")
        var keepConsumers = false

        @Option(help: "A key that makes the post happen once: a repeated post with the same key returns the first one's version.")
        var idempotencyKey: String?

        @Option(help: ArgumentHelp(
            "A field of the trace context the post continues, as NAME=VALUE; repeat it for each field.",
            discussion: "The versions carry it to their deliveries, whose spans join that trace. Example: --trace-context traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            valueName: "name=value"))
        var traceContext: [String] = []

        struct Posted: Codable {
            let signal: String
            /// The stable name given with --stable-name.
            let name: String?
            let version: UInt64
        }

        func run() throws {
            let signal: SignalID, value: String
            switch (arguments.count, stableName) {
            case (1, let name?):
                signal = SignalID(stableName: name)
                value = arguments[0]
            case (2, nil):
                guard let id = SignalID(arguments[0]) else { throw ToolError.usage("\(arguments[0]) is not a signal id (a UUID)") }
                signal = id
                value = arguments[1]
            default:
                throw ToolError.usage("give the signal's id and the value, or --stable-name NAME and the value")
            }
            let payload = Array(value.utf8)
            guard (try? JSONSerialization.jsonObject(with: Data(payload), options: [.fragmentsAllowed])) != nil else {
                throw ToolError.usage("the value is not JSON: \(value)")
            }
            var fields: [String: String] = [:]
            for field in traceContext {
                guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                    throw ToolError.usage("--trace-context takes NAME=VALUE, not \(field)")
                }
                fields[String(field[..<equals])] = String(field[field.index(after: equals)...])
            }
            let store = try options.open()
            let center = try SignalCenter.open(store: store, processIdentity: "wfctl-\(getpid())",
                                               configuration: .init(pollInterval: .seconds(3600)))
            defer { try? center.stop() }
            let version = try center.post([SignalPost(
                signal: signal, payload: payload, terminatesConsumersAfterDelivery: !keepConsumers, idempotencyKey: idempotencyKey,
                traceContext: TraceContext(fields))])[0]
            if options.json { return emit(try json(Posted(signal: signal.description, name: stableName, version: version))) }
            emit("posted version \(version) of \(signal)" + (stableName.map { " (\($0))" } ?? ""))
        }
    }
}
