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
        let mapSize: Int
        let mapUsed: Int
        let instances: Int
        let logEntries: Int
        let snapshots: Int
        let signals: Int
        let consumers: Int
        let readersInUse: Int
        let maxReaders: Int
        let lastTransactionID: UInt64
    }

    func run() throws {
        let store = try options.open()
        let statistics = try store.statistics()
        let signals = try openSignals(store)
        let report = Report(
            store: store.path, formatVersion: statistics.formatVersion,
            sizeOnDisk: ((try? FileManager.default.attributesOfItem(atPath: store.path + "/data.mdb"))?[.size] as? Int) ?? 0,
            mapSize: statistics.mapSize, mapUsed: statistics.usedBytes, instances: statistics.instances,
            logEntries: statistics.logEntries, snapshots: statistics.snapshots,
            signals: try signals?.signals().count ?? 0, consumers: try signals?.consumers().count ?? 0,
            readersInUse: statistics.readersInUse, maxReaders: statistics.maxReaders, lastTransactionID: statistics.lastTransactionID)
        try signals?.stop()
        if options.json { return emit(try json(report)) }
        var table = Table("FIELD", "VALUE")
        table.add("store", report.store)
        table.add("format version", "\(report.formatVersion)")
        table.add("size on disk", size(report.sizeOnDisk))
        table.add("map size", "\(size(report.mapSize)) (\(size(report.mapUsed)) used)")
        table.add("instances", "\(report.instances)")
        table.add("log entries", "\(report.logEntries)")
        table.add("snapshots", "\(report.snapshots)")
        table.add("signals", "\(report.signals)")
        table.add("consumers", "\(report.consumers)")
        table.add("readers", "\(report.readersInUse) of \(report.maxReaders) in use")
        table.add("last transaction", "\(report.lastTransactionID)")
        emit(table.text)
    }
}
