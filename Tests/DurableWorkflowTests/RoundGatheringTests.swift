@testable import DurableWorkflow
import Testing

/// The committer's gathering policy, looked at with a clock of the test's own.
struct RoundGatheringTests {
    let start = ContinuousClock.now
    func at(_ microseconds: Int) -> ContinuousClock.Instant { start + .microseconds(microseconds) }

    @Test("after a round of one (or none) nothing is gathered: a lone client is never held back")
    func loneClient() {
        #expect(RoundGathering(after: 0, at: start) == nil)
        #expect(RoundGathering(after: 1, at: start) == nil)
        #expect(RoundGathering(after: 2, at: start)?.wanted == 1)
    }

    @Test("the round is taken once most of the last round's writers wait")
    func enoughCameBack() throws {
        var gathering = try #require(RoundGathering(after: 10, at: start))
        #expect(gathering.wanted == 9)
        #expect(gathering.look(waiting: 3, at: at(0)) == .wait)
        #expect(gathering.look(waiting: 7, at: at(30)) == .wait)
        #expect(gathering.look(waiting: 9, at: at(60)) == .take)
    }

    @Test("the round is taken once two looks in a row found no more writers; each arrival starts the count again")
    func arrivalsStop() throws {
        var gathering = try #require(RoundGathering(after: 50, at: start))
        #expect(gathering.look(waiting: 4, at: at(0)) == .wait)
        #expect(gathering.look(waiting: 4, at: at(30)) == .wait)
        #expect(gathering.look(waiting: 6, at: at(60)) == .wait)
        #expect(gathering.look(waiting: 6, at: at(90)) == .wait)
        #expect(gathering.look(waiting: 6, at: at(120)) == .take)
    }

    @Test("while writers keep coming, the round is taken at the limit")
    func limitBoundsTheWait() throws {
        var gathering = try #require(RoundGathering(after: 1_000, at: start))
        var waiting = 0, time = 0
        while gathering.look(waiting: waiting, at: at(time)) == .wait {
            waiting += 1
            time += 30
            try #require(time <= 10_000, "gathering did not stop")
        }
        #expect(at(time) >= start + RoundGathering.limit)
        #expect(at(time) < start + RoundGathering.limit + .microseconds(30))
    }

    @Test("a host's thread blocked for its commit is served at once")
    func blockedHost() throws {
        var gathering = try #require(RoundGathering(after: 10, at: start))
        #expect(gathering.look(waiting: 2, at: at(0)) == .wait)
        #expect(gathering.look(waiting: nil, at: at(30)) == .take)
    }
}
