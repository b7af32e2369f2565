/// How a background committer of the ``CommitPipeline`` gathers its next round where a commit is a
/// network round trip: after a round of several writers, it looks at how many wait again every
/// ``step`` while their clients come back, and takes the round once ``share`` of the last round's
/// writers wait, once ``quietSteps`` looks in a row found no more, once ``limit`` has passed, or
/// at once when a host's thread is blocked for its commit.
///
/// The limit bounds what gathering adds to a commit's latency. After a round of one it does not
/// gather at all: a lone client is never held back.
struct RoundGathering {
    static let step = Duration.microseconds(30)
    static let quietSteps = 2
    static let limit = Duration.microseconds(500)
    static let share = 0.9

    /// After a look: wait another ``step``, or take the round now.
    enum Decision: Equatable { case wait, take }

    /// How many waiting writers are enough.
    let wanted: Int
    private let deadline: ContinuousClock.Instant
    private var waiting: Int?
    private var quiet = 0

    /// Gathering after a round of `last` writers that settled at `now`; `nil` after a round of one
    /// (or none), which is not gathered for.
    init?(after last: Int, at now: ContinuousClock.Instant) {
        guard last > 1 else { return nil }
        wanted = max(1, Int(Double(last) * Self.share))
        deadline = now + Self.limit
    }

    /// What to do now that `waiting` writers wait (`nil`: a host's thread is blocked until a
    /// round settles its writer).
    mutating func look(waiting now: Int?, at time: ContinuousClock.Instant) -> Decision {
        guard let now, now < wanted, time < deadline else { return .take }
        if let waiting {
            if now > waiting {
                quiet = 0
            } else {
                quiet += 1
                if quiet >= Self.quietSteps { return .take }
            }
        }
        waiting = now
        return .wait
    }
}
