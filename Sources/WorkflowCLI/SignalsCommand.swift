import ArgumentParser
import DurableWorkflow
import WorkflowSignals

/// `wfctl signals STORE [SIGNAL-ID]`
struct Signals: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Signal records, versions retained, consumers and their positions, pending deliveries.",
        discussion: "Example: wfctl signals /var/lib/service/workflows 6F9619FF-8B86-D011-B42D-00C04FC964FF")

    @OptionGroup var options: ReadOptions

    @Argument(help: "Only this signal: its versions, consumers and pending deliveries.")
    var signal: String?

    struct Detail: Codable {
        let signal: SignalInfo?
        let versions: [Version]
        let consumers: [ConsumerInfo]
        let pending: [PendingDelivery]
    }

    struct Version: Codable {
        let version: UInt64
        let posted: String
        let terminates: Bool
        let payload: JSONValue?
        /// The poster's trace context, when it had a tracer.
        let traceContext: [String: String]?
    }

    func run() throws {
        let store = try options.open()
        guard let center = try openSignals(store) else {
            if signal != nil { throw ToolError.usage("the store has no signals") }
            return emit(options.json ? "[]" : Table("SIGNAL", "LATEST", "RETAINED", "CONSUMERS", "UPDATED").text)
        }
        defer { try? center.stop() }
        guard let signal else {
            let infos = try center.signals()
            if options.json { return emit(try json(infos)) }
            var table = Table("SIGNAL", "LATEST", "RETAINED", "CONSUMERS", "UPDATED")
            for info in infos {
                table.add(info.id.description, "\(info.latestVersion)", info.retainedVersions.map(String.init).joined(separator: ","),
                          "\(info.consumers)", iso(info.updated))
            }
            return emit(table.text)
        }
        guard let id = SignalID(signal) else { throw ToolError.usage("\"\(signal)\" is not a UUID") }
        let versions = try center.versions(of: id)
        let detail = Detail(
            signal: try center.signals().first { $0.id == id },
            versions: versions.map { Version(version: $0.version, posted: iso($0.posted), terminates: $0.terminatesConsumersAfterDelivery,
                                             payload: JSONValue.parse($0.payload),
                                             traceContext: $0.traceContext.isEmpty ? nil : $0.traceContext.fields) },
            consumers: try center.consumers(of: id),
            pending: try center.pendingDeliveries().filter { $0.consumer.signal == id })
        if options.json { return emit(try json(detail)) }
        var versionTable = Table("VERSION", "POSTED", "TERMINATES", "PAYLOAD")
        for version in versions {
            versionTable.add("\(version.version)", iso(version.posted), version.terminatesConsumersAfterDelivery ? "yes" : "no",
                             readable(version.payload))
        }
        var consumerTable = Table("CONSUMER", "OWNER", "PROCESS", "BEHAVIOUR", "COALESCING", "SCOPE", "DELIVERED", "PENDING")
        for consumer in detail.consumers {
            let pending = detail.pending.first { $0.consumer.id == consumer.id }?.versions ?? []
            consumerTable.add(consumer.id.description, consumer.owner, consumer.processIdentity, consumer.behaviour.rawValue,
                              consumer.coalescing.rawValue, consumer.scope.rawValue, "\(consumer.lastDelivered)",
                              pending.isEmpty ? "-" : pending.map(String.init).joined(separator: ","))
        }
        emit("signal \(id): latest version \(detail.signal?.latestVersion ?? 0)\n\n\(versionTable.text)\n\n\(consumerTable.text)")
    }
}
