/// How far a commit is made durable before it counts as done, whatever the backend.
public enum CommitDurability: Sendable, Hashable {
    /// Synced to stable storage before it counts as done: survives a crash of the machine.
    case synced
    /// Written, and synced later (in the background, or by the store's `sync()`): survives a
    /// crash of the process, not of the machine.
    case processCrashSafe
}

extension CommitDurability {
    /// The stronger of the two: a commit holding parts that ask for both must meet both.
    public func strongest(with other: CommitDurability) -> CommitDurability {
        self == .synced || other == .synced ? .synced : .processCrashSafe
    }
}
