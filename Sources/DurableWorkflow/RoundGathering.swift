/// How a background committer of the ``CommitPipeline`` gathers its next round: after a round of
/// several writers, it looks at how many wait again every ``step`` while their clients come back,
/// and takes the round once ``share`` of the last round's writers wait, once ``quietSteps`` looks
/// in a row found no more, once ``limit`` has passed, or at once when a host's thread is blocked
/// for its commit.
///
/// The limit bounds what gathering adds to a commit's latency. After a round of one it does not
/// gather at all: a lone client is never held back.
///
/// Where commits are serial (one at a time) and a round is written only once it is taken (a
/// backend that does not write parts as pulled; LMDB does, and gathers while it writes, with
/// `serial` false), a committer that finds at least half of the last round's writers waiting the
/// moment that round ends takes them at once: its own commits are then what the clients wait for
/// (they came back while it committed), and any pause would only leave it idle. Gathering there
/// is for the other case, a round ending with few back yet: committed at once, those few would
/// pay a whole synced commit for themselves while the rest arrive just after it started.
///
/// While a round is written part by part, the count looked at is every writer the round holds
/// so far: it grows as writers come back and are written, and the round ends by the same rules;
/// once the limit has passed it takes in no more writers, even while they keep coming.
struct RoundGathering {
    static let step = Duration.microseconds(30)
    static let quietSteps = 2
    static let limit = Duration.microseconds(500)
    static let share = 0.9

    /// After a look: wait another ``step``, or take the round now.
    enum Decision: Equatable { case wait, take }

    /// How many waiting writers are enough.
    let wanted: Int
    /// On the first look, how many waiting writers are taken at once (serial commits only).
    private let enoughAtOnce: Int?
    private let deadline: ContinuousClock.Instant
    private var waiting: Int?
    private var quiet = 0

    /// Gathering after a round of `last` writers that settled at `now`, for a backend whose
    /// commits are `serial` or not; `nil` after a round of one (or none), which is not gathered for.
    init?(after last: Int, serial: Bool = false, at now: ContinuousClock.Instant) {
        guard last > 1 else { return nil }
        wanted = max(1, Int(Double(last) * Self.share))
        enoughAtOnce = serial ? max(1, last / 2) : nil
        deadline = now + Self.limit
    }

    /// What to do now that `waiting` writers wait (`nil`: a host's thread is blocked until a
    /// round settles its writer).
    mutating func look(waiting now: Int?, at time: ContinuousClock.Instant) -> Decision {
        guard let now, now < wanted, time < deadline else { return .take }
        if waiting == nil, let enoughAtOnce, now >= enoughAtOnce { return .take }
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
