import Dispatch
import Glibc
import Workflow
import WorkflowLocks
import WorkflowStorage

/// The store's one commit path: every instance's batches wait here, and a committer takes
/// everything waiting, from every instance, into one transaction, commits it once and then
/// settles each instance (its committed sequence, observers, attachments, its host's notice).
///
/// Concurrent hosts therefore share commits and their syncs, as concurrent transactions share a
/// WAL flush in a database server. The committer is whoever finds room for one: a host that must
/// wait for its commit (strict, processCrashSafe, stop) commits on its own thread, taking along
/// whatever else waits, and returns once its own entries are settled; a host that hands a batch
/// off (group commits) wakes a background committer, which commits round after round until
/// nothing waits. A committer's first round starts at once, so a lone client is committed without
/// delay. On a durable backend a background committer gathers before each further round: while the
/// clients of the round it just settled keep coming back, it waits a little for them (see
/// ``gather(after:)``), so that a round carries most of them instead of the few that came back
/// first. Without it, clients that come back one after another each make a round of one or two,
/// and the per-round work (a sync; for a server, the round trip and the procedure call) goes into
/// almost nothing. Where commits are serial and most clients are back by the time a round ends,
/// the next round starts at once (``RoundGathering``). Where the backend writes a commit's parts
/// as they are handed over (LMDB: into its open write transaction), a background committer
/// gathers while it writes instead: its round starts with whoever waits, and each writer that
/// comes back before the round is taken goes in as a further part, so that writing the round
/// overlaps the clients' own work instead of following it.
///
/// As many rounds may be in flight at once as the backend takes commits at once
/// (`StorageBackend.concurrentCommits`: one for LMDB, whose writes are serial; several for a
/// database server, where a commit is a round trip), the second and later only while at least
/// ``extraRoundMinimum`` writers wait for one. There a background committer runs on a thread of
/// its own, which it blocks while its commit's round trip lasts; on a serial backend it runs on a
/// Dispatch worker (see ``startBackgroundCommitter()``). A writer is in at most one round at a time,
/// so one instance's batches go in the order they were handed in; a writer whose round is in
/// flight waits in the list, and the committer of that round takes it next. An instance refused
/// in a round (another host owns it) or whose action cannot be encoded fails alone, with nothing
/// of it written. A failed commit fails every instance that had entries in it.
final class CommitPipeline: Sendable {
    private let state: Lock<State>

    /// The committers at work, who waits for a round, and whose round is in flight.
    private struct State {
        var phase = Phase.idle
        /// How many rounds may be in flight at once.
        let concurrency: Int
        /// Writers with batches waiting, each once, in the order they first handed one in.
        var ready: [LogWriter] = []
        /// Hosts' threads blocked until a round of another committer settles their writer (a
        /// commit that must be durable before it returns): no committer gathers while one waits.
        var blockedHosts = 0

        /// Whether a waiting writer can go in a new round now.
        var hasTakeable: Bool { ready.contains { !$0.inRound.load(ordering: .relaxed) } }

        /// Whether at least `count` waiting writers are not in flight (it stops counting there).
        func hasTakeable(atLeast count: Int) -> Bool { takeable(upTo: count) >= count }

        /// How many waiting writers are not in flight, counted up to `limit`.
        func takeable(upTo limit: Int) -> Int {
            var found = 0
            for writer in ready where !writer.inRound.load(ordering: .relaxed) {
                found += 1
                if found >= limit { break }
            }
            return found
        }

        /// Whether another committer may start: the first at once; a further one (up to the
        /// backend's concurrency) only while enough writers wait to fill a round of their own.
        /// Fewer wait for the round in flight, whose committer takes them next. Rounds of one or
        /// two instances each, started as fast as clients come back, spend the client's and the
        /// server's work per round on almost nothing, and clients then never bunch up into larger
        /// rounds again (wf-bench postgres measures it).
        var hasRoom: Bool {
            switch phase {
            case .idle: true
            case .committing(let committers): committers < concurrency && hasTakeable(atLeast: CommitPipeline.extraRoundMinimum)
            }
        }

        /// Takes every waiting writer that is not in flight, for a new round.
        mutating func takeRound() -> [LogWriter] {
            var taken: [LogWriter] = [], kept: [LogWriter] = []
            for writer in ready {
                if writer.inRound.load(ordering: .relaxed) {
                    kept.append(writer)
                } else {
                    writer.inRound.store(true, ordering: .relaxed)
                    taken.append(writer)
                }
            }
            ready = kept
            return taken
        }

        mutating func startCommitter() {
            switch phase {
            case .idle: phase = .committing(committers: 1)
            case .committing(let committers): phase = .committing(committers: committers + 1)
            }
        }

        mutating func endCommitter() {
            if case .committing(let committers) = phase { phase = committers > 1 ? .committing(committers: committers - 1) : .idle }
        }
    }

    /// The pipeline's lifecycle.
    enum Phase: Equatable {
        /// Nothing is being committed: the next writer to hand in a batch starts a committer.
        case idle
        /// Committers (hosts' threads or background workers) run rounds until nothing they can
        /// take waits; at most the backend's number of concurrent commits.
        case committing(committers: Int)
    }

    /// How many writers must wait before a round starts beside one already in flight.
    static let extraRoundMinimum = 16

    /// Whether background committers gather their rounds after the first (``gather(after:)``).
    let gathers: Bool
    /// Whether the backend takes one commit at a time (``RoundGathering`` then takes a round at
    /// once when its committer, not its clients, is what they wait for).
    let serial: Bool
    /// Whether a background committer gathers its rounds while it writes them: the backend writes
    /// each part of a commit as it is handed over (`StorageBackend.writesPartsAsPulled`), so the
    /// round starts with whoever waits and takes the others in as they come back.
    let pulls: Bool
    /// The background committers' threads. Never Dispatch's workers: hosts whose strict commits
    /// wait for a round block the Dispatch workers they drain on (a control request, a timer's
    /// background drain), and with enough of them at once a committer queued on Dispatch would
    /// wait for a thread that only its round frees (300 pauses at once deadlocked that way).
    let committerThreads: CommitterThreads?

    /// A pipeline for a backend that takes `concurrency` commits at once; it gathers rounds when
    /// `gathers` (where a commit has a cost of its own to share: a sync, a round trip; not in
    /// memory).
    init(concurrency: Int, gathers: Bool, pulls: Bool = false) {
        state = Lock(State(concurrency: max(1, concurrency)))
        self.gathers = gathers
        serial = concurrency <= 1
        self.pulls = gathers && pulls
        committerThreads = CommitterThreads()
    }

    /// Whether a committer is at work now (a moment later it may not be).
    var isCommitting: Bool { state.withLock { $0.phase != .idle } }

    /// `writer` has batches waiting for a background commit (it was not listed yet): lists it
    /// for the next round, and starts a background committer if there is room for one.
    func submit(_ writer: LogWriter) {
        let startCommitter = state.withLock { state -> Bool in
            state.ready.append(writer)
            guard state.hasRoom, state.hasTakeable else { return false }
            state.startCommitter()
            return true
        }
        if startCommitter { startBackgroundCommitter() }
    }

    /// Lists `writer` (when `list`: it has batches waiting and was not listed yet), then runs on
    /// the caller's thread until the writer says its entries through the last it handed in are
    /// settled: commits rounds itself while there is room for a committer, else waits for a
    /// round of its writer. Anything still waiting when it is done goes to a background committer.
    func commit(_ writer: LogWriter, list: Bool) {
        var list = list
        while true {
            let lead = state.withLock { state -> [LogWriter]? in
                if list { state.ready.append(writer) }
                guard state.hasRoom, state.hasTakeable else {
                    state.blockedHosts += 1
                    return nil
                }
                state.startCommitter()
                return state.takeRound()
            }
            list = false
            guard var round = lead else {
                if !writer.isSettled { writer.waitForRound() }
                state.withLock { $0.blockedHosts -= 1 }
                if writer.isSettled { return }
                continue
            }
            while true {
                commitRound(round, onCommitter: false)
                enum Next { case done, handOver, wait, round([LogWriter]) }
                let next = state.withLock { state -> Next in
                    if writer.isSettled {
                        // This committer's place goes to a background one if anything can go.
                        if state.hasTakeable { return .handOver }
                        state.endCommitter()
                        return .done
                    }
                    let taken = state.takeRound()
                    if !taken.isEmpty { return .round(taken) }
                    // The writer is in another committer's round: wait for it.
                    state.endCommitter()
                    return .wait
                }
                switch next {
                case .done: return
                case .handOver:
                    startBackgroundCommitter()
                    return
                case .wait: break
                case .round(let taken):
                    round = taken
                    continue
                }
                break
            }
        }
    }

    /// Starts a background committer (its place among the committers is already taken), on a
    /// thread of its own (``CommitterThreads``): on a Dispatch worker, a committer blocked for its
    /// round trip holds one of the few threads that also run the hosts' tasks, whose clients then
    /// wait for a thread while cores are free; and a committer queued on Dispatch behind workers
    /// blocked for its round would never start.
    private func startBackgroundCommitter() {
        if let committerThreads {
            committerThreads.run { self.commitInBackground() }
        } else {
            DispatchQueue.global().async { self.commitInBackground() }
        }
    }

    /// A background committer: rounds until nothing it can take waits, gathering each round after
    /// the first (before it, or while writing it when the pipeline ``pulls``).
    private func commitInBackground() {
        var last = 0
        while true {
            if pulls { awaitFirst(after: last) } else { gather(after: last) }
            let round = state.withLock { state -> [LogWriter] in
                let taken = state.takeRound()
                if taken.isEmpty { state.endCommitter() }
                return taken
            }
            if round.isEmpty { return }
            last = pulls ? commitRound(round, gatheringAfter: last) : commitRound(round, onCommitter: true)
        }
    }

    /// On a pipeline that gathers, waits before the round after one of `last` writers as
    /// ``RoundGathering`` says.
    private func gather(after last: Int) {
        guard gathers, var gathering = RoundGathering(after: last, serial: serial, at: .now) else { return }
        let wanted = gathering.wanted
        /// How many writers wait, or `nil` while a host's thread is blocked for its commit.
        func waiting() -> Int? { state.withLock { $0.blockedHosts > 0 ? nil : $0.takeable(upTo: wanted) } }
        while gathering.look(waiting: waiting(), at: .now) == .wait {
            Self.pause(RoundGathering.step)
        }
    }

    /// On a pipeline that pulls, waits after a round of `last` writers until one waits again
    /// (or ``RoundGathering/limit`` passed), so that the committer stays for the next round.
    private func awaitFirst(after last: Int) {
        guard last > 1 else { return }
        let deadline = ContinuousClock.now + RoundGathering.limit
        while !state.withLock({ $0.hasTakeable || $0.blockedHosts > 0 }), ContinuousClock.now < deadline {
            Self.pause(RoundGathering.step)
        }
    }

    /// Sleeps the calling thread (a background committer's) for `duration`.
    private static func pause(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }

    /// Takes the waiting batches of `writers` (each now in flight in this round alone), writes
    /// them in one transaction and settles them; then they may go in another round. `onCommitter`:
    /// this thread is a background committer, which may release a settled idle host itself
    /// (`JournalListener.journalDidCommit(through:onCommitter:)`); a host's thread does not.
    /// Returns how many writers the round took.
    @discardableResult
    private func commitRound(_ writers: [LogWriter], onCommitter: Bool) -> Int {
        var round = RoundInFlight(writers: writers)
        guard let store = round.store else { return end(&round) }
        let started = ContinuousClock.now
        let request = round.request(from: 0)
        // Nothing to write when every participant failed to encode.
        let written = request.changes.isEmpty
            ? RoundInFlight.Written() : round.record(Result { () throws(StorageFailure) in try store.backend.commit(request) })
        return settle(&round, written: written, store: store, duration: ContinuousClock.now - started, onCommitter: onCommitter)
    }

    /// As ``commitRound(_:onCommitter:)`` on a background committer, on a backend that writes each
    /// part of a commit as it is handed over: the round starts with `writers` and, while they are
    /// written, takes in the writers that come back, as ``RoundGathering`` says after a round of
    /// `last`. The writers waiting when a part is asked for go in at once: writing them keeps the
    /// committer busy where a pause would leave it idle.
    private func commitRound(_ writers: [LogWriter], gatheringAfter last: Int) -> Int {
        var round = RoundInFlight(writers: writers)
        guard let store = round.store else { return end(&round) }
        let started = ContinuousClock.now
        var gathering = RoundGathering(after: last, at: started)
        // Writers keep coming while a round is written: past the limit it takes none after the
        // part in hand, so that waiting for others adds at most the limit to a commit's latency.
        let limit = started + RoundGathering.limit
        var ending = false
        let first = round.request(from: 0)
        guard !first.changes.isEmpty else {
            return settle(&round, written: RoundInFlight.Written(), store: store, duration: .zero, onCommitter: true)
        }
        let outcomes = Result { () throws(StorageFailure) in
            try store.backend.commit(first) { () -> CommitRequest? in
                if ending { return nil }
                while true {
                    let (taken, blocked) = state.withLock { ($0.takeRound(), $0.blockedHosts > 0) }
                    // A host's thread waits for a round: this one ends with the part in hand.
                    if blocked { gathering = nil }
                    if !taken.isEmpty {
                        let start = round.add(taken)
                        let part = round.request(from: start)
                        if ContinuousClock.now >= limit { ending = true }
                        if !part.changes.isEmpty { return part }
                        if ending { return nil }
                        continue
                    }
                    guard gathering?.look(waiting: round.writers.count, at: .now) == .wait else { return nil }
                    Self.pause(RoundGathering.step)
                }
            }
        }
        let written = round.record(outcomes)
        return settle(&round, written: written, store: store, duration: ContinuousClock.now - started, onCommitter: true)
    }

    /// Records the round's commit, settles its participants, and lets its writers go in another
    /// round. Returns how many writers the round took.
    private func settle(
        _ round: inout RoundInFlight, written: RoundInFlight.Written?, store: WorkflowStore, duration: Duration, onCommitter: Bool
    ) -> Int {
        if let written {
            store.metrics.committed(entries: written.entries, actions: written.actions, instances: written.instances, duration: duration)
        } else {
            store.metrics.commitFailures.increment()
        }
        // Each participant is settled where it lies (a copy would retain everything it holds).
        // Its last batch goes back to its host for the host's next action
        // (``LogWriter/recycle(_:)``): before the host hears of the commit, unless settling
        // reads the batches (attachments, spans) or the participant failed; else once every
        // participant is settled, when whatever else they hold is freed, so that their hosts
        // go on meanwhile. Participants are settled in the order they were taken.
        var participants = round.takeParticipants()
        for index in participants.indices {
            let writer = participants[index].writer
            if participants[index].failure == nil, !participants[index].hasAttachmentsOrSpans { writer.recycle(&participants[index]) }
            writer.settle(&participants[index], duration: duration, onCommitter: onCommitter)
        }
        for index in participants.indices where !participants[index].batches.isEmpty {
            let writer = participants[index].writer
            writer.recycle(&participants[index])
        }
        return end(&round)
    }

    /// Lets the round's writers go in another round; returns how many there were.
    private func end(_ round: inout RoundInFlight) -> Int {
        state.withLock { state in
            for writer in round.writers { writer.inRound.store(false, ordering: .relaxed) }
        }
        return round.writers.count
    }
}

/// The writers a round of the ``CommitPipeline`` took, their participants, and the requests
/// made of them.
private struct RoundInFlight {
    /// Every writer the round took, in order (some may have had nothing waiting).
    private(set) var writers: [LogWriter]
    /// The participants, in the order taken; settling moves them out.
    private var participants: [CommitParticipant]
    /// For each change in the requests so far, in order, the participant it is of.
    private var requested: [Int] = []
    private var scratch = ChangesScratch()

    init(writers: [LogWriter]) {
        self.writers = writers
        participants = writers.compactMap { $0.takeForCommit() }
    }

    /// Moves the participants out, for settling (a copy would retain everything each holds).
    mutating func takeParticipants() -> [CommitParticipant] {
        var taken: [CommitParticipant] = []
        swap(&taken, &participants)
        return taken
    }

    /// The store the round writes to (`nil` when no writer had anything waiting).
    var store: WorkflowStore? { participants.first?.writer.store }

    /// Adds the writers `taken` later; returns where their participants start.
    mutating func add(_ taken: [LogWriter]) -> Int {
        let start = participants.count
        writers.append(contentsOf: taken)
        for writer in taken {
            if let participant = writer.takeForCommit() { participants.append(participant) }
        }
        return start
    }

    /// The request for the participants from `start` on. A participant whose actions cannot be
    /// encoded is marked failed alone, with nothing of it written. Synced unless every
    /// participant in it only asks for its commits to survive a process crash.
    mutating func request(from start: Int) -> CommitRequest {
        var syncInterval: Duration?
        for index in start..<participants.count {
            guard case .processCrashSafe(let interval) = participants[index].writer.configuration.mode else {
                syncInterval = nil
                break
            }
            syncInterval = min(interval, syncInterval ?? interval)
        }
        var request = CommitRequest(durability: .synced)
        request.changes.reserveCapacity(participants.count - start)
        if let syncInterval, let store {
            request.durability = .processCrashSafe
            store.backend.syncPeriodically(every: syncInterval)
        }
        for index in start..<participants.count {
            do {
                guard try participants[index].writer.appendChanges(for: &participants[index], reusing: &scratch, to: &request.changes) else {
                    continue
                }
                requested.append(index)
            } catch {
                participants[index].failure = error
            }
        }
        return request
    }

    /// What a commit wrote.
    struct Written { var entries = 0, actions = 0, instances = 0 }

    /// Records each participant's part in the commit (an outcome per change requested, in
    /// order, or the commit's failure): one the store refuses (another host owns the instance)
    /// is marked failed alone; a failed commit marks every participant in it failed.
    /// Returns what was written (`nil` when the store failed the commit).
    mutating func record(_ commit: Result<[CommitOutcome], StorageFailure>) -> Written? {
        guard let store else { return Written() }
        do {
            let outcomes = try commit.get()
            var written = Written()
            for (index, outcome) in zip(requested, outcomes) {
                switch outcome {
                case .committed:
                    written.instances += 1
                    written.entries += participants[index].entryCount
                    written.actions += participants[index].actionCount
                case .refused(let current):
                    participants[index].failure = participants[index].writer.refusal(current: current, at: participants[index].lastSequence ?? 0)
                case .alreadyDelivered(let consumer, let version):
                    participants[index].failure = participants[index].writer.deliveredTwice(
                        consumer: consumer, version: version, at: participants[index].lastSequence ?? 0)
                }
            }
            return written
        } catch {
            for index in requested {
                participants[index].failure = DurableError.storage(error, store: store.path, instance: participants[index].writer.instanceID)
            }
            return nil
        }
    }
}

/// One instance's part in a round of the ``CommitPipeline``: the batches taken from its writer,
/// and what writing them produced.
///
/// What the committer asks of the batches as a whole is summed up once, when they are taken: a
/// batch holds several arrays and objects, and every copy of one (a `for batch in` loop makes
/// one per batch) retains and releases each of them on the committer's thread.
struct CommitParticipant {
    let writer: LogWriter
    private(set) var batches: [CommitBatch]
    let listener: (any JournalListener)?
    /// The entries written, for observers (only when the instance has some).
    var written: [LogEntry] = []
    /// Why the participant's batches were not written.
    var failure: (any Error)?
    /// The sequences of the first and the last entry in the batches (`nil` when they hold none).
    let firstSequence: UInt64?
    let lastSequence: UInt64?
    /// How many entries the batches hold, and how many of them log an action.
    let entryCount: Int
    let actionCount: Int
    /// The status the batches' commit sets (the last batch's that sets one), if any.
    let status: InstanceStatus?
    /// Some batch has attachments or spans, which settling tells of the outcome.
    let hasAttachmentsOrSpans: Bool

    /// The batches, which the participant no longer holds (once it is settled).
    mutating func takeBatches() -> [CommitBatch] {
        var taken: [CommitBatch] = []
        swap(&taken, &batches)
        return taken
    }

    init(writer: LogWriter, batches: [CommitBatch], listener: (any JournalListener)?) {
        self.writer = writer
        self.batches = batches
        self.listener = listener
        var first: UInt64?, last: UInt64?, entries = 0, actions = 0, status: InstanceStatus?, extras = false
        for index in batches.indices {
            if let sequence = batches[index].entries.first?.sequence, first == nil { first = sequence }
            if let sequence = batches[index].entries.last?.sequence { last = sequence }
            entries += batches[index].entries.count
            actions += batches[index].actionCount
            if let set = batches[index].status { status = set }
            extras = extras || !batches[index].attachments.isEmpty || !batches[index].spans.isEmpty
        }
        firstSequence = first
        lastSequence = last
        entryCount = entries
        actionCount = actions
        self.status = status
        hasAttachmentsOrSpans = extras
    }
}
