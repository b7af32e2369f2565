import ArgumentParser
import DurableWorkflow
import WorkflowSignals

/// `wfctl signals STORE [SIGNAL-ID]`
struct Signals: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Signal records (with the stable names they were made from), versions retained, consumers and their positions, pending deliveries.",
        discussion: """
        Example: wfctl signals /var/lib/service/workflows 6F9619FF-8B86-D011-B42D-00C04FC964FF
        Example: wfctl signals /var/lib/service/workflows --stable-name settlement:pay-3
        """)

    @OptionGroup var options: ReadOptions

    @Argument(help: "Only this signal: its versions, consumers and pending deliveries.")
    var signal: String?

    @Option(help: "Only the signal made from this stable name (SignalID(stableName:)), instead of its id.")
    var stableName: String?

    func run() throws {
        let store = try options.open()
        guard let center = try openSignals(store) else {
            if signal != nil { throw ToolError.usage("the store has no signals") }
            return emit(options.json ? "[]" : Table("SIGNAL", "NAME", "LATEST", "RETAINED", "CONSUMERS", "UPDATED").text)
        }
        defer { try? center.stop() }
        let id: SignalID
        switch (signal, stableName) {
        case (nil, nil):
            let infos = try center.signals()
            if options.json { return emit(try json(try Reports.signals(center))) }
            var table = Table("SIGNAL", "NAME", "LATEST", "RETAINED", "CONSUMERS", "UPDATED")
            for info in infos {
                table.add(info.id.description, info.name ?? "-", "\(info.latestVersion)",
                          info.retainedVersions.map(String.init).joined(separator: ","), "\(info.consumers)", iso(info.updated))
            }
            return emit(table.text)
        case (let text?, nil):
            guard let parsed = SignalID(text) else { throw ToolError.usage("\"\(text)\" is not a UUID (give a stable name with --stable-name)") }
            id = parsed
        case (nil, let name?):
            id = SignalID(stableName: name)
        case (_?, _?):
            throw ToolError.usage("give a signal's id or --stable-name, not both")
        }
        let versions = try center.versions(of: id)
        let detail = try Reports.signal(id, in: center)
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
        let name = detail.signal?.name.map { " (\($0))" } ?? ""
        emit("signal \(id)\(name): latest version \(detail.signal?.latestVersion ?? 0)\n\n\(versionTable.text)\n\n\(consumerTable.text)")
    }
}
