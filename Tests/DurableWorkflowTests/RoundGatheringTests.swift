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

/// The same policy where commits are serial (LMDB): the committer itself may be what clients wait for.
struct SerialRoundGatheringTests {
    let start = ContinuousClock.now
    func at(_ microseconds: Int) -> ContinuousClock.Instant { start + .microseconds(microseconds) }

    @Test("half of the last round already waiting as it ends is taken at once: the clients came back while it committed")
    func committerIsTheBottleneck() throws {
        var gathering = try #require(RoundGathering(after: 500, serial: true, at: start))
        #expect(gathering.look(waiting: 250, at: at(0)) == .take)
        var another = try #require(RoundGathering(after: 500, serial: true, at: start))
        #expect(another.look(waiting: 480, at: at(0)) == .take)
    }

    @Test("a round ending with few back is gathered as on any backend, to most of the last round")
    func fewBackIsGathered() throws {
        var gathering = try #require(RoundGathering(after: 10, serial: true, at: start))
        #expect(gathering.look(waiting: 3, at: at(0)) == .wait)
        // Half is no reason to stop once gathering has begun: only most of the round is.
        #expect(gathering.look(waiting: 6, at: at(30)) == .wait)
        #expect(gathering.look(waiting: 8, at: at(60)) == .wait)
        #expect(gathering.look(waiting: 9, at: at(90)) == .take)
    }

    @Test("where commits overlap (a server), half waiting at the first look is still gathered for")
    func concurrentBackendsGather() throws {
        var gathering = try #require(RoundGathering(after: 500, serial: false, at: start))
        #expect(gathering.look(waiting: 250, at: at(0)) == .wait)
    }

    @Test("after a round of one nothing is gathered either")
    func loneClient() {
        #expect(RoundGathering(after: 1, serial: true, at: start) == nil)
    }
}
