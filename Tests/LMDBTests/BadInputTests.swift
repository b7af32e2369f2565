import Foundation
import LMDB
import TestSupport
import Testing

@Suite("Bad input")
struct BadInputTests {
    @Test("a store whose parent directory does not exist is a missingDirectory error naming the path")
    func missingDirectory() throws {
        let dir = TemporaryDirectory("missing")
        let path = dir.child("no/such/store")
        let error = #expect(throws: LMDBError.self) { _ = try Environment.open(path: path) }
        #expect(error?.kind == .missingDirectory)
        #expect(error?.path == path)
        #expect(error?.operation.isEmpty == false)
    }

    @Test("without createDirectoryIfMissing a missing store directory is an error")
    func missingDirectoryNotCreated() throws {
        let dir = TemporaryDirectory("missing2")
        var config = EnvironmentConfiguration()
        config.createDirectoryIfMissing = false
        expectLMDBError(.missingDirectory) { _ = try Environment.open(path: dir.child("store"), configuration: config) }
    }

    @Test("garbage where the data file should be is notAnLMDBEnvironment, and the file is left alone")
    func garbageDataFile() throws {
        let dir = TemporaryDirectory("garbage")
        let garbage = Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        try garbage.write(to: URL(fileURLWithPath: dir.child("data.mdb")))
        let error = #expect(throws: LMDBError.self) { _ = try Environment.open(path: dir.path) }
        #expect(error?.kind == .notAnLMDBEnvironment)
        #expect(error?.path == dir.path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.child("data.mdb"))) == garbage)
    }

    @Test("a regular file where the store directory should be is notAnLMDBEnvironment")
    func fileInsteadOfDirectory() throws {
        let dir = TemporaryDirectory("file")
        try Data("not a store".utf8).write(to: URL(fileURLWithPath: dir.child("store")))
        expectLMDBError(.notAnLMDBEnvironment) { _ = try Environment.open(path: dir.child("store")) }
    }

    @Test("a directory the process cannot write is a readOnly error (checked as an unprivileged child)")
    func readOnlyDirectory() throws {
        let dir = TemporaryDirectory("rodir")
        chmod(dir.path, 0o755)
        let store = dir.child("store")
        mkdir(store, 0o555)
        let child = try ChildProcess(["lmdb-open-unprivileged", store])
        let line = child.readLine() ?? ""
        #expect(try child.waitForExit() == 0)
        #expect(line.hasPrefix("error readOnly"), "child said: \(line)")
        #expect(line.contains(store))
    }

    @Test("a key over 511 bytes (or empty) is keyTooLong, and the transaction's other writes still commit")
    func overLongKey() throws {
        let dir = TemporaryDirectory("longkey")
        let env = try Environment.open(path: dir.path)
        let db: Database<String, String> = try env.database(named: "kv")
        let errors: [LMDBError] = try env.write { txn throws in
            try txn.put("ok", forKey: "short", in: db)
            var errors: [LMDBError] = []
            for badKey in [String(repeating: "k", count: 512), ""] {
                do throws(LMDBError) { try txn.put("v", forKey: badKey, in: db) } catch { errors.append(error) }
            }
            try txn.put("max", forKey: String(repeating: "k", count: 511), in: db)
            return errors
        }
        #expect(errors.map(\.kind) == [.keyTooLong, .keyTooLong])
        #expect(errors.first?.operation == "put into 'kv'")
        #expect(errors.first?.path == dir.path)
        #expect(errors.first?.description.contains("512 bytes") == true)
        try env.read { txn throws in
            #expect(try txn.get("short", in: db) == "ok")
            #expect(try txn.get(String(repeating: "k", count: 511), in: db) == "max")
        }
    }

    @Test("a value read with the wrong type is decodingFailed")
    func wrongType() throws {
        let dir = TemporaryDirectory("decode")
        let env = try Environment.open(path: dir.path)
        let bytes: Database<UInt64, [UInt8]> = try env.database(named: "kv")
        try env.write { txn in try txn.put([0xFF, 0xFE], forKey: 1, in: bytes) }
        let asNumber = bytes.retyped(key: UInt64.self, value: UInt64.self)
        let asText = bytes.retyped(key: UInt64.self, value: String.self)
        try env.read { txn throws in
            expectLMDBError(.decodingFailed) { _ = try txn.get(1, in: asNumber) }
            expectLMDBError(.decodingFailed) { _ = try txn.get(1, in: asText) }
        }
    }
}
