import ArgumentParser
import DurableWorkflow

/// `wfctl markers STORE`
struct Markers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Which instances still need each version of each version marker (before a build drops one).",
        discussion: """
        Reads every instance's log: the markers it fixed and at which version. An instance that has not fixed a
        marker started before it existed, and takes version 1 where its logged entries reach it. Completed and
        cancelled instances are left out unless --all.
        Example: wfctl markers /var/lib/service/workflows
        """)

    @OptionGroup var options: ReadOptions

    @Flag(help: "Count completed and cancelled instances too.")
    var all = false

    /// One marker's versions (with --json, an array of them).
    struct Row: Codable {
        let marker: String
        /// Version to the instances that fixed it.
        let versions: [String: [String]]
        /// The instances that have not fixed it (version 1 where they reach it).
        let notFixed: [String]
    }

    func run() throws {
        let store = try options.open()
        let instances = try store.instances().filter { all || $0.status == .running || $0.status == .failed }
        var fixed: [String: [String: [String]]] = [:]
        var progress = Progress("read instances:", total: instances.count)
        var tables: [String: [String: Int]] = [:]
        for instance in instances {
            defer { progress.advance() }
            let markers = try store.versionMarkers(of: instance.id)
            tables[instance.id] = markers
            for (marker, version) in markers { fixed[marker, default: [:]]["\(version)", default: []].append(instance.id) }
        }
        progress.finish()
        let rows = fixed.keys.sorted().map { marker in
            Row(marker: marker, versions: fixed[marker]!.mapValues { $0.sorted() },
                notFixed: instances.map(\.id).filter { tables[$0]?[marker] == nil }.sorted())
        }
        if options.json { return emit(try json(rows)) }
        var table = Table("MARKER", "VERSION", "INSTANCES", "EXAMPLES")
        for row in rows {
            for version in row.versions.keys.sorted() {
                let ids = row.versions[version]!
                table.add(row.marker, version, "\(ids.count)", ids.prefix(3).joined(separator: ", "))
            }
            if !row.notFixed.isEmpty {
                table.add(row.marker, "not fixed (1)", "\(row.notFixed.count)", row.notFixed.prefix(3).joined(separator: ", "))
            }
        }
        emit(table.text)
    }
}
