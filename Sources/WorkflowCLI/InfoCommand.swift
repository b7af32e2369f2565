import ArgumentParser
import DurableWorkflow
import Foundation

/// `wfctl info STORE`
struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Format version, size on disk, map size and use, counts of instances, entries, signals, consumers, readers.",
        discussion: "Example: wfctl info /var/lib/service/workflows --json")

    @OptionGroup var options: ReadOptions

    struct Report: Codable {
        let store: String
        let formatVersion: UInt32
        let sizeOnDisk: Int
        let backend: String
        let mapSize: Int?
        let mapUsed: Int?
        let instances: Int
        let logEntries: Int
        let snapshots: Int
        let signals: Int
        let consumers: Int
        let readersInUse: Int?
        let maxReaders: Int?
        let lastTransactionID: UInt64?
    }

    func run() throws {
        let store = try options.open()
        let statistics = try store.statistics()
        let signals = try openSignals(store)
        let report = Report(
            store: store.path, formatVersion: statistics.formatVersion,
            sizeOnDisk: ((try? FileManager.default.attributesOfItem(atPath: store.path + "/data.mdb"))?[.size] as? Int) ?? 0,
            backend: statistics.backend, mapSize: statistics.capacityBytes, mapUsed: statistics.usedBytes, instances: statistics.instances,
            logEntries: statistics.logEntries, snapshots: statistics.snapshots,
            signals: try signals?.signals().count ?? 0, consumers: try signals?.consumers().count ?? 0,
            readersInUse: statistics.readersInUse, maxReaders: statistics.maxReaders, lastTransactionID: statistics.lastTransactionID)
        try signals?.stop()
        if options.json { return emit(try json(report)) }
        var table = Table("FIELD", "VALUE")
        table.add("store", report.store)
        table.add("format version", "\(report.formatVersion)")
        table.add("size on disk", size(report.sizeOnDisk))
        table.add("backend", report.backend)
        if let mapSize = report.mapSize { table.add("map size", "\(size(mapSize)) (\(size(report.mapUsed ?? 0)) used)") }
        table.add("instances", "\(report.instances)")
        table.add("log entries", "\(report.logEntries)")
        table.add("snapshots", "\(report.snapshots)")
        table.add("signals", "\(report.signals)")
        table.add("consumers", "\(report.consumers)")
        if let readers = report.readersInUse, let maxReaders = report.maxReaders {
            table.add("readers", "\(readers) of \(maxReaders) in use")
        }
        if let transaction = report.lastTransactionID { table.add("last transaction", "\(transaction)") }
        emit(table.text)
    }
}
