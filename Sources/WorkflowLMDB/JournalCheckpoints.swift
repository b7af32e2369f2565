/// When a commit that appended to the journal moves it into the archive (a checkpoint).
///
/// A checkpoint rewrites the page of `log` that each instance's segment record goes to, however
/// few entries the instance has, so its cost per entry falls as the entries per instance grow. A
/// store with many instances in flight therefore lets its journal grow with them
/// (``entriesPerInstance``), between a floor (``entries``) and a ceiling (``most``) that bounds a
/// checkpoint's stall, its copy of the journal, and the passes over the journal that reads make
/// when they find no tails of it they can use (``JournalTailsSnapshot``).
package struct JournalCheckpoints: Sendable, Equatable {
    /// The fewest entries at which the journal is checkpointed.
    package var entries: Int
    /// The fewest entries per instance with entries in the journal at which it is checkpointed.
    package var entriesPerInstance: Int
    /// The entries at which the journal is checkpointed however many instances they are of.
    package var most: Int

    package init(entries: Int, entriesPerInstance: Int, most: Int) {
        self.entries = entries
        self.entriesPerInstance = entriesPerInstance
        self.most = most
    }

    /// A store's checkpoints: from 32,768 entries, and at least 128 per instance up to 262,144
    /// (1,000 instances in flight: about 128,000).
    package static let standard = JournalCheckpoints(entries: 32_768, entriesPerInstance: 128, most: 262_144)

    /// Checkpoints at `entries` entries, however many instances they are of (tests make them
    /// frequent).
    package static func every(_ entries: Int) -> JournalCheckpoints {
        JournalCheckpoints(entries: entries, entriesPerInstance: 0, most: entries)
    }

    /// The entries at which a journal holding entries of `instances` instances is checkpointed.
    package func threshold(instances: Int) -> Int {
        min(most, max(entries, entriesPerInstance * instances))
    }
}
