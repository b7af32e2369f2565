/// A storage's checkpoint copy of the journal between checkpoints, read ahead of the next one in
/// the background, and which write transactions changed the journal since.
///
/// A copy read ahead (in a read transaction, on another thread) holds the journal as the write
/// transaction `snapshot` left it. The checkpoint in write transaction `w` takes it when every
/// transaction after `snapshot` and before `w` was a commit of this storage that only appended
/// to the journal (LMDB numbers write transactions one after another, whatever process commits
/// them): it then copies only the entries after the copy's last. Anything else (a claim, a delete,
/// another storage or process, a checkpoint) leaves it to be emptied and filled afresh.
struct JournalCopies {
    private enum Stage {
        /// Between checkpoints, holding the buffers.
        case idle(JournalCopy)
        /// Being read ahead; a checkpoint meanwhile copies into buffers of its own.
        case preparing
        /// Read ahead, waiting for the checkpoint.
        case prepared(JournalCopy)
        /// A checkpoint is copying into it.
        case lent
    }

    private var stage = Stage.idle(JournalCopy())
    /// The last write transaction this storage's commits confirmed.
    private var lastCommit: UInt64 = 0
    /// The first write transaction whose journal only this storage's commits changed since,
    /// appending: a copy of its journal or a later one needs only their entries added.
    private var appendedOnlySince: UInt64 = 0
    /// How many checkpoints took a copy read ahead.
    private(set) var preparedTaken = 0

    /// This storage's commit in write transaction `id` is confirmed; `checkpointed`: it moved the
    /// journal into the archive.
    mutating func committed(_ id: UInt64, checkpointed: Bool) {
        if lastCommit == 0 || id != lastCommit &+ 1 { appendedOnlySince = id &- 1 }
        if checkpointed { appendedOnlySince = id }
        lastCommit = id
    }

    /// Whether the journal may be read ahead now (no copy is being or was read ahead).
    var mayPrepare: Bool {
        if case .idle = stage { true } else { false }
    }

    /// The buffers to read the journal ahead into, unless a copy is being or was read ahead, or
    /// lent.
    mutating func startPreparing() -> JournalCopy? {
        guard case .idle(var copy) = stage else { return nil }
        // Out of the stage first, so that emptying it keeps its buffers rather than copying them.
        stage = .preparing
        copy.empty()
        return copy
    }

    /// The copy read ahead (empty when the read failed).
    mutating func finishPreparing(_ copy: JournalCopy) {
        guard case .preparing = stage else { return }
        stage = copy.snapshot == nil ? .idle(copy) : .prepared(copy)
    }

    /// The copy for the checkpoint in write transaction `id`: the one read ahead when only this
    /// storage's commits appended to the journal since (it holds every entry up to its `through`),
    /// else empty buffers.
    mutating func lend(to id: UInt64) -> JournalCopy {
        switch stage {
        case .idle(var copy):
            stage = .lent
            copy.empty()
            return copy
        case .prepared(var copy):
            stage = .lent
            if let snapshot = copy.snapshot, snapshot >= appendedOnlySince, lastCommit == id &- 1 {
                preparedTaken += 1
            } else {
                copy.empty()
            }
            return copy
        case .preparing, .lent:
            return JournalCopy()
        }
    }

    /// The checkpoint is done with `copy`, emptied: its buffers are kept for the next.
    mutating func giveBack(_ copy: JournalCopy) {
        guard case .lent = stage else { return }
        stage = .idle(copy)
    }
}
