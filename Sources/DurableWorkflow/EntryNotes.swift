/// What a log entry records about the build that wrote it, besides its action (rules V1, V2):
/// the version markers that build decided at this entry, and the versions of the state types
/// whose stored form changed from this entry on. Empty for almost every entry; an entry with notes
/// is written in log format 3, every other entry in format 2 (which builds before version markers
/// read).
public struct EntryNotes: Sendable, Hashable {
    /// Version markers decided at this entry (for a new instance's first entry, every marker its
    /// build declared): marker name to version.
    public var versionMarkers: [String: Int]
    /// Workflow name to the version of its state's stored form (``VersionedState``), from this
    /// entry on: digests recorded from here were computed over that form.
    public var stateVersions: [String: Int]
    /// The workers (timers, tasks, signal waits and other workers) the entry's render pass began
    /// or stopped declaring, by `<node path>#<key>`: the sequence each declared one started at
    /// (its idempotency key's), or 0 for one no longer declared. With ``declaresAllWorkers``,
    /// every worker the tree declares after the entry, none stopped. What the build that wrote a
    /// log declared can then be told at any of its entries (a replay gate's render diff).
    public var declaredWorkers: [String: Int]
    /// Whether ``declaredWorkers`` holds every declared worker rather than the changes (the first
    /// render pass a host of a build records).
    public var declaresAllWorkers: Bool

    /// No notes.
    public init(
        versionMarkers: [String: Int] = [:], stateVersions: [String: Int] = [:], declaredWorkers: [String: Int] = [:],
        declaresAllWorkers: Bool = false
    ) {
        self.versionMarkers = versionMarkers
        self.stateVersions = stateVersions
        self.declaredWorkers = declaredWorkers
        self.declaresAllWorkers = declaresAllWorkers
    }

    /// Whether there is nothing to note.
    public var isEmpty: Bool { versionMarkers.isEmpty && stateVersions.isEmpty && declaredWorkers.isEmpty && !declaresAllWorkers }

    /// These notes and `other`'s, `other` winning for a name both hold.
    func merging(_ other: EntryNotes) -> EntryNotes {
        EntryNotes(versionMarkers: versionMarkers.merging(other.versionMarkers) { $1 },
                   stateVersions: stateVersions.merging(other.stateVersions) { $1 },
                   declaredWorkers: other.declaresAllWorkers ? other.declaredWorkers : declaredWorkers.merging(other.declaredWorkers) { $1 },
                   declaresAllWorkers: declaresAllWorkers || other.declaresAllWorkers)
    }

    // MARK: Binary form

    /// Kinds of note in a record. A reader skips a kind of `0x80` or above it does not know (it
    /// changes no replay); one below that it does not know makes the entry unreadable.
    private enum Kind: UInt8 {
        case versionMarkers = 1
        case stateVersions = 2
        // Replay does not depend on what render declared: a reader that does not know these
        // skips them.
        case workerChanges = 0x81
        case allWorkers = 0x82
    }

    /// The notes as stored in a record: per kind, its byte and a block of (name, version) pairs
    /// in name order.
    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        let workers = declaresAllWorkers ? Kind.allWorkers : .workerChanges
        for (kind, values) in [(Kind.versionMarkers, versionMarkers), (.stateVersions, stateVersions), (workers, declaredWorkers)]
        where !values.isEmpty || kind == .allWorkers {
            var block = ByteWriter()
            block.write(UInt32(values.count))
            for (name, version) in values.sorted(by: { $0.key < $1.key }) {
                block.write(name)
                block.write(Int64(version))
            }
            writer.write(kind.rawValue)
            writer.write(block: block.bytes)
        }
        return writer.bytes
    }

    /// The notes stored in `bytes`; `nil` when they are malformed or hold a kind this build
    /// must understand and does not.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> EntryNotes? {
        var reader = ByteReader(bytes)
        var notes = EntryNotes()
        do {
            while reader.remaining > 0 {
                let code = try reader.read(UInt8.self)
                let block = try reader.readBlock()
                guard let kind = Kind(rawValue: code) else {
                    if code >= 0x80 { continue }
                    return nil
                }
                guard let values = block.withUnsafeBytes({ Self.pairs($0) }) else { return nil }
                switch kind {
                case .versionMarkers: notes.versionMarkers = values
                case .stateVersions: notes.stateVersions = values
                case .workerChanges: notes.declaredWorkers = values
                case .allWorkers:
                    notes.declaredWorkers = values
                    notes.declaresAllWorkers = true
                }
            }
        } catch {
            return nil
        }
        return notes
    }

    /// The (name, version) pairs of one kind's block; `nil` when it is malformed.
    private static func pairs(_ raw: UnsafeRawBufferPointer) -> [String: Int]? {
        var reader = ByteReader(raw)
        var values: [String: Int] = [:]
        do {
            for _ in 0..<(try reader.read(UInt32.self)) {
                let name = try reader.readString()
                values[name] = Int(try reader.read(Int64.self))
            }
        } catch {
            return nil
        }
        return reader.remaining == 0 ? values : nil
    }
}
