import LMDB

/// The mutable index records of the instances that one storage's last write transaction
/// committed, as that transaction left them (for an instance with journal entries, with its last
/// one's sequence and time), so that a commit in the very next write transaction takes an
/// instance's record from here instead of looking it up in `state`.
///
/// LMDB numbers write transactions one after another, whichever process commits them: when this
/// storage's transaction `n` committed and the one now writing is `n + 1`, no other writer (a claim,
/// a delete, another storage or process) changed any record between. Anything else (a gap, a
/// transaction whose commit was not confirmed, one that checkpointed the journal and so rewrote
/// the records it held) starts the next transaction with nothing cached. Only write transactions,
/// which run one at a time, read or change it.
struct StateCache {
    /// The records as the transaction `committed` left them.
    private var states = InstanceKeyTable<IndexRecord.State>()
    private var committed: UInt64 = 0
    /// The records the transaction being written leaves, and its id.
    private var written = InstanceKeyTable<IndexRecord.State>()
    private var writing: UInt64 = 0

    /// The write transaction `id` starts (again, when one that grew the map runs anew).
    mutating func begin(_ id: UInt64) {
        if committed == 0 || committed &+ 1 != id { states.removeAll() }
        written.removeAll()
        writing = id
    }

    /// The instance's record as this transaction left it so far, or else as the one before left
    /// it, when either wrote it.
    func state(of instance: UInt64) -> IndexRecord.State? {
        written[instance] ?? states[instance]
    }

    /// This transaction leaves the instance's record as `state`.
    mutating func wrote(_ state: IndexRecord.State, of instance: UInt64) {
        written[instance] = state
    }

    /// This transaction rewrote records it did not tell of (a checkpoint): the next one reads them.
    mutating func forgetWritten() {
        written.removeAll()
        writing = 0
    }

    /// The write transaction `id` committed: the next one may take its records from here.
    mutating func confirm(_ id: UInt64) {
        guard writing != 0, writing == id else {
            states.removeAll()
            committed = 0
            return
        }
        swap(&states, &written)
        written.removeAll()
        committed = id
        writing = 0
    }
}
