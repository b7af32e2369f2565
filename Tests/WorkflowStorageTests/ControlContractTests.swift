import Dispatch
import Testing
import WorkflowLocks
import WorkflowStorage

/// What every backend promises of control requests (rule O2), through the protocol alone.
@Suite("Storage contract: control requests, numbered per instance and answered once (every backend)")
struct ControlContractTests {
    static func request(_ instance: String, _ verb: ControlVerb = .pause, at time: Int64 = 1_000) -> NewControlRequest {
        NewControlRequest(instance: instance, verb: verb, reason: "why \(verb)", deadline: verb == .cancel ? 5_000_000_000 : nil,
                          requestedBy: "test", requested: time)
    }

    static func answer(_ outcome: ControlAnswerRecord.Outcome, at time: Int64 = 2_000, sequence: UInt64? = 7) -> ControlAnswerRecord {
        ControlAnswerRecord(outcome: outcome, sequence: sequence, detail: "done", answeredBy: "a host", answered: time)
    }

    @Test("requests are numbered from 1 per instance, kept with every field, listed pending by instance and number; an unknown instance gets none", arguments: BackendKind.allCases)
    func postAndRead(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("b"))
        _ = try backend.create(Records.new("a"))
        let posted = try backend.postControlRequests([Self.request("b", .cancel), Self.request("a"), Self.request("b", .terminate),
                                                      Self.request("nobody")])
        #expect(posted.map { $0?.number } == [1, 1, 2, nil])
        let stored = try backend.controlRequests(of: "b")
        #expect(stored.map(\.number) == [1, 2])
        #expect(stored.first?.request == Self.request("b", .cancel) && stored.first?.answer == nil && stored.first?.instance == "b")
        #expect(try backend.pendingControlRequests().map { "\($0.instance)#\($0.number)" } == ["a#1", "b#1", "b#2"])
        #expect(try backend.controlRequests(of: "nobody").isEmpty)
    }

    @Test("an answer is kept once: a second answer of the same request is refused; answered requests leave the pending list", arguments: BackendKind.allCases)
    func answers(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("i"))
        _ = try backend.postControlRequests([Self.request("i"), Self.request("i", .unpause)])
        #expect(try backend.answerControlRequest(instance: "i", number: 1, answer: Self.answer(.applied)))
        #expect(try !backend.answerControlRequest(instance: "i", number: 1, answer: Self.answer(.refused)))
        #expect(try !backend.answerControlRequest(instance: "i", number: 9, answer: Self.answer(.refused)))
        #expect(try backend.controlRequests(of: "i").first?.answer == Self.answer(.applied))
        #expect(try backend.pendingControlRequests().map(\.number) == [2])
        #expect(try backend.answerControlRequest(instance: "i", number: 2, answer: Self.answer(.unchanged, sequence: nil)))
        #expect(try backend.pendingControlRequests().isEmpty)
        #expect(try backend.controlRequests(of: "i").last?.answer?.sequence == nil)
    }

    @Test("answers older than a week go as new requests come, except the instance's last, and numbers go on from it", arguments: BackendKind.allCases)
    func retention(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("r"))
        _ = try backend.postControlRequests([Self.request("r"), Self.request("r", .unpause)])
        _ = try backend.answerControlRequest(instance: "r", number: 1, answer: Self.answer(.applied))
        _ = try backend.answerControlRequest(instance: "r", number: 2, answer: Self.answer(.applied))
        let later = 2_000 + ControlRequestRetention.answeredFor + 1
        let third = try backend.postControlRequests([Self.request("r", at: later)])
        #expect(third.first??.number == 3)
        #expect(try backend.controlRequests(of: "r").map(\.number) == [2, 3])
    }

    @Test("posts to one instance from several threads at once get distinct, dense numbers", arguments: BackendKind.allCases)
    func concurrentPosts(kind: BackendKind) throws {
        let backend = try kind.make().backend
        _ = try backend.create(Records.new("c"))
        let numbers = Lock<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<5 {
                if let posted = try? backend.postControlRequests([Self.request("c")]).first, let number = posted?.number {
                    numbers.withLock { $0.append(number) }
                }
            }
        }
        #expect(numbers.withLock { $0.sorted() } == Array(1...20))
    }
}
