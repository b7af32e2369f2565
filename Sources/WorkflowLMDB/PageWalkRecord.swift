import Foundation
import LMDB
import WorkflowStorage

#if canImport(Glibc)
import Glibc
#endif

/// When an LMDB store's pages were last walked, and by which build of the program, in the file
/// `page-walk` of the store's directory (a file of its own, read without LMDB: reading it can
/// never meet a damaged page). Three lines, `key value`:
/// - `walked-build`: the program that last walked every page (its executable's device, inode,
///   size and modification time);
/// - `walked-data`: the data file it walked (device, inode and birth time: a copy or a restore is
///   another);
/// - `opened-build`: the program that last opened the store writable.
///
/// A walk is due (``PageWalkPolicy/whenUnchecked``) when there is no record, or the data file
/// is not the one walked, or the walk was another build's, or another build opened the store
/// since. A store this program creates is recorded as walked: it has no page yet to damage.
struct PageWalkRecord: Equatable {
    var walkedBuild: String?
    var walkedData: String?
    var openedBuild: String?

    static let fileName = "page-walk"

    /// The running program, as a build: its executable's identity.
    static let currentBuild: String = {
        var info = stat()
        guard stat("/proc/self/exe", &info) == 0 else { return "unknown" }
        return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec)"
    }()

    /// The data file of the store in `directory` (device, inode, birth time), if there is one.
    static func dataFile(in directory: String) -> String? {
        StoreWalk.fileIdentity(directory + "/data.mdb")
    }

    /// The record in `directory` (empty when there is none, or it does not read).
    static func read(in directory: String) -> PageWalkRecord {
        guard let text = try? String(contentsOfFile: directory + "/" + fileName, encoding: .utf8) else { return PageWalkRecord() }
        var record = PageWalkRecord()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "walked-build": record.walkedBuild = parts[1]
            case "walked-data": record.walkedData = parts[1]
            case "opened-build": record.openedBuild = parts[1]
            default: continue
            }
        }
        return record
    }

    /// Writes the record into `directory` (replacing the file whole); a directory that cannot be
    /// written keeps the old record, and the next open walks again.
    func write(in directory: String) {
        var text = ""
        if let walkedBuild { text += "walked-build \(walkedBuild)\n" }
        if let walkedData { text += "walked-data \(walkedData)\n" }
        if let openedBuild { text += "opened-build \(openedBuild)\n" }
        try? text.write(toFile: directory + "/" + Self.fileName, atomically: true, encoding: .utf8)
    }

    /// Whether a walk is due for the store in `directory` under ``PageWalkPolicy/whenUnchecked``.
    func isDue(in directory: String) -> Bool {
        guard let walkedBuild, let walkedData else { return true }
        return walkedBuild != Self.currentBuild || walkedData != Self.dataFile(in: directory)
            || (openedBuild != nil && openedBuild != Self.currentBuild)
    }

    /// Records that this program opened the store writable (after a due check read the record).
    static func recordOpen(in directory: String, created: Bool) {
        var record = read(in: directory)
        if created {
            record = PageWalkRecord(walkedBuild: currentBuild, walkedData: dataFile(in: directory), openedBuild: currentBuild)
        } else {
            guard record.openedBuild != currentBuild else { return }
            record.openedBuild = currentBuild
        }
        record.write(in: directory)
    }

    /// Walks the store in `directory` in a child process if `policy` (with `due`, for
    /// `whenUnchecked`) says so; an intact walk is recorded.
    static func walk(_ directory: String, policy: PageWalkPolicy, due: Bool) -> PageWalkOutcome {
        switch policy {
        case .never: return .notNeeded
        case .whenUnchecked where !due: return .notNeeded
        case .whenUnchecked, .always: break
        }
        guard dataFile(in: directory) != nil else { return .notNeeded }
        let outcome = StoreWalk.inChildProcess(path: directory)
        switch outcome {
        case .intact(let entries):
            PageWalkRecord(walkedBuild: currentBuild, walkedData: dataFile(in: directory), openedBuild: currentBuild).write(in: directory)
            return .intact(entries: entries)
        case .stopped, .failed:
            return .damaged(StorageFailure(
                kind: .corrupted, backend: "LMDB", location: directory, operation: "walk every page in a child process", detail: outcome.summary,
                recovery: "Restore the store from a copy: `wfctl check STORE` lists what is damaged, `wfctl export STORE` copies out the instances that still read",
                underlying: nil))
        case .unfinished:
            return .unfinished(outcome.summary)
        }
    }
}
