import LMDB
import TestSupport
import Testing

@Suite("Transaction references")
struct TransactionReferenceTests {
    @Test("a reference reaches its write transaction inside withReference: its writes commit or abort with it")
    func writesThroughTheReference() throws {
        let dir = TemporaryDirectory("txn-ref")
        let env = try Environment.open(path: dir.path)
        let db: Database<String, String> = try env.database(named: "d")
        try env.write { txn in
            try txn.withReference { reference in
                try reference.withTransaction { (txn) throws(LMDBError) in try txn.put("one", forKey: "a", in: db) }
                #expect(try reference.withTransaction { (txn) throws(LMDBError) in try txn.get("a", in: db) } == "one")
            }
        }
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try env.write { txn in
                try txn.withReference { reference in
                    try reference.withTransaction { (txn) throws(LMDBError) in try txn.put("two", forKey: "b", in: db) }
                }
                throw Abort()
            }
        }
        #expect(try env.read { txn in (try txn.get("a", in: db), try txn.get("b", in: db)) } == ("one", nil))
    }

    @Test("a reference kept past withReference throws instead of touching the finished transaction")
    func endedReferenceThrows() throws {
        let dir = TemporaryDirectory("txn-ref-ended")
        let env = try Environment.open(path: dir.path)
        let db: Database<String, String> = try env.database(named: "d")
        var kept: TransactionReference?
        try env.write { txn in txn.withReference { kept = $0 } }
        let reference = try #require(kept)
        expectLMDBError(.badValue) {
            try reference.withTransaction { (txn) throws(LMDBError) in try txn.put("late", forKey: "c", in: db) }
        }
        #expect(try env.read { txn in try txn.get("c", in: db) } == nil)
    }
}
