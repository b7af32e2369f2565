import DurableWorkflow
import Foundation
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowStorage
#if Postgres
import WorkflowPostgres
#endif

/// The backends the contract suite runs over: every one must pass every test.
///
/// PostgreSQL is among them when the package's `Postgres` trait is on and
/// `WORKFLOW_TEST_POSTGRES` names a server (`tools/test` starts one and sets it); with the trait
/// on and no server, the suite says once that it skips PostgreSQL.
enum BackendKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case lmdb
    case postgres

    var testDescription: String { rawValue }

    static let allCases: [BackendKind] = {
        #if Postgres
        if PostgresTestServer.configuration != nil { return [.memory, .lmdb, .postgres] }
        FileHandle.standardError.write(Data("note: WORKFLOW_TEST_POSTGRES is not set: the contract suite skips PostgreSQL\n".utf8))
        #endif
        return [.memory, .lmdb]
    }()

    /// A fresh, empty store of this kind (for LMDB, in a temporary directory the value keeps).
    func make() throws -> FreshBackend {
        switch self {
        case .memory:
            return FreshBackend(backend: InMemoryStorage(), directory: nil, reopen: nil)
        case .lmdb:
            let directory = TemporaryDirectory("contract")
            let path = directory.path
            return FreshBackend(backend: try LMDBStorage.open(path: path), directory: directory) { try LMDBStorage.open(path: path) }
        case .postgres:
            #if Postgres
            guard var configuration = PostgresTestServer.configuration else { throw PostgresTestServer.Missing() }
            configuration.schema = PostgresTestServer.freshSchema()
            let opened = configuration
            return FreshBackend(backend: try PostgresStorage.open(opened), directory: nil) { try PostgresStorage.open(opened) }
            #else
            throw PostgresTestServer.Missing()
            #endif
        }
    }
}

/// The PostgreSQL server the tests use, from `WORKFLOW_TEST_POSTGRES`; each store gets a schema of its own.
enum PostgresTestServer {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "the PostgreSQL tests need the Postgres trait and WORKFLOW_TEST_POSTGRES (tools/test sets both)" }
    }

    #if Postgres
    static let configuration: PostgresConfiguration? = ProcessInfo.processInfo.environment["WORKFLOW_TEST_POSTGRES"]
        .flatMap { PostgresConfiguration(url: $0) }
    #endif

    /// A schema name no other test uses.
    static func freshSchema() -> String {
        "wf_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }
}

/// A backend under test, with what must live as long as it.
struct FreshBackend {
    let backend: any StorageBackend
    let directory: TemporaryDirectory?
    /// Opens the same store again (`nil` for one that lives only in memory).
    let reopen: (() throws -> any StorageBackend)?

    var store: WorkflowStore { WorkflowStore(backend: backend) }
}

/// Helpers that build storage values for the contract tests.
enum Records {
    /// Records `first...last`, each `"entry <sequence>"` as bytes.
    static func range(_ first: UInt64, _ last: UInt64) -> LogRecords {
        var records = LogRecords(firstSequence: first)
        for sequence in first...last { records.append(Array("entry \(sequence)".utf8)) }
        return records
    }

    static func new(_ id: String, entries: UInt64 = 1, claim: InstanceClaim = .none, created: Int64 = 1_000) -> NewInstance {
        NewInstance(id: id, workflowType: "Test.Flow", codec: "binary", status: .running, created: created, claim: claim,
                    entries: range(1, entries))
    }

    static let hostA = InstanceClaim(pid: 101, processStart: 7, token: 1)
    static let hostB = InstanceClaim(pid: 202, processStart: 9, token: 2)
}

extension StorageBackend {
    /// The stored entries of `key` from `from` through `through`, as strings.
    func texts(_ key: UInt64, from: UInt64 = 1, through: UInt64 = .max) throws -> [String] {
        var found: [String] = []
        try readEntries(of: key, from: from, through: through) { sequence, bytes in
            found.append("\(sequence):" + String(decoding: bytes, as: UTF8.self))
            return true
        }
        return found
    }

    /// The sequences of the stored snapshots of `key` at or below `sequence`, newest first.
    func snapshotSequences(_ key: UInt64, atMost sequence: UInt64 = .max) throws -> [UInt64] {
        var found: [UInt64] = []
        try readSnapshots(of: key, atMost: sequence) { sequence, _ in
            found.append(sequence)
            return true
        }
        return found
    }
}

/// A test backend over an ``InMemoryStorage`` that changes how some calls behave (commits held,
/// slowed or pulled; reads counted) and hands every other call to it as it is.
protocol InMemoryWrapper: StorageBackend {
    var inner: InMemoryStorage { get }
}

extension InMemoryWrapper {
    var name: String { inner.name }
    var location: String { inner.location }
    var isReadOnly: Bool { false }

    func create(_ instance: NewInstance) throws(StorageFailure) -> StoredInstance? { try inner.create(instance) }
    func instance(id: String) throws(StorageFailure) -> StoredInstance? { try inner.instance(id: id) }
    func instances() throws(StorageFailure) -> [StoredInstance] { try inner.instances() }
    func instanceIDs() throws(StorageFailure) -> [String] { try inner.instanceIDs() }
    func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        try inner.claim(id: id, as: claim, takingOverIf: takingOverIf)
    }
    func release(id: String, claim: InstanceClaim) throws(StorageFailure) { try inner.release(id: id, claim: claim) }
    func setStatus(id: String, to status: InstanceStatus, at time: Int64, failure: String?) throws(StorageFailure) -> StoredInstance? {
        try inner.setStatus(id: id, to: status, at: time, failure: failure)
    }
    func delete(id: String) throws(StorageFailure) -> Bool { try inner.delete(id: id) }
    func sync() throws(StorageFailure) {}
    func syncPeriodically(every interval: Duration) {}
    func readEntries(of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try inner.readEntries(of: key, from: from, through: through, visit)
    }
    func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try inner.readSnapshots(of: key, atMost: sequence, visit)
    }
    func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure) {
        try inner.putSnapshot(id: id, sequence: sequence, bytes: bytes)
    }
    func signalStorage() throws(StorageFailure) -> any SignalStorage { try inner.signalStorage() }
    func statistics() throws(StorageFailure) -> StorageStatistics { try inner.statistics() }
    func checkStructure(progress: (String) -> Void) -> [StoreDamage] { inner.checkStructure(progress: progress) }
    func copy(to destination: String) throws(StorageFailure) { try inner.copy(to: destination) }
}
