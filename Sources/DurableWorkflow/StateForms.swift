import Workflow
import WorkflowCodec

/// The stored forms of ``VersionedState`` types across versions (rule V2): reading a form an
/// older build wrote, and writing today's state in the form an older build would have, for its
/// recorded digests. Only the binary and JSON codecs' forms can be edited; another codec's
/// snapshots of an older form are replayed from the log instead, and its older digests are not
/// compared.
enum StateForms {
    /// The version of `type`'s stored form (1 for a type that declares none).
    static func version(of type: Any.Type) -> Int {
        (type as? any VersionedState.Type)?.stateVersion ?? 1
    }

    /// Why a stored form cannot be read as today's type.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// A `State` from `bytes`, written under version `stored` of its form.
    static func decode<State>(_ type: State.Type, from bytes: [UInt8], storedVersion stored: Int, codec: any PayloadCodec) throws -> State {
        let current = version(of: type)
        if stored == current {
            guard let decodable = type as? any Decodable.Type else { throw Unreadable(description: "\(type) is not Decodable") }
            func open<D: Decodable>(_ concrete: D.Type) throws -> Any { try codec.decode(concrete, from: bytes) }
            guard let state = try open(decodable) as? State else { throw Unreadable(description: "\(type) is not Decodable") }
            return state
        }
        if stored > current {
            throw Unreadable(description: "it was written under version \(stored) of the state's form, newer than this build's \(current)")
        }
        guard let versioned = type as? any VersionedState.Type else {
            throw Unreadable(description: "it was written under version \(stored) of the state's form, this build's is \(current)")
        }
        func open<V: VersionedState>(_ concrete: V.Type) throws -> Any { try migrate(V.self, from: bytes, storedVersion: stored, codec: codec) }
        guard let state = try open(versioned) as? State else { throw Unreadable(description: "\(type) is not Decodable") }
        return state
    }

    /// Today's `V` from the stored form of version `stored` (older than today's): the declared
    /// revisions applied to the stored form, and ``VersionedState/migrate(from:decoder:)`` from
    /// the first revision they cannot describe.
    static func migrate<V: VersionedState>(_ type: V.Type, from bytes: [UInt8], storedVersion stored: Int, codec: any PayloadCodec) throws -> V {
        var (tree, form) = try read(bytes, stored: stored, current: V.stateVersion)
        for revision in revisions(of: V.self, after: stored) {
            switch revision.change {
            case .added(let path, let encode):
                let (value, _) = try StoredValue.read(try encode(codec))
                tree.insert(value, at: path[...], form: form)
            case .renamed(let path, let newName):
                tree.rename(at: path[...], to: newName, form: form)
            case .removed(let path):
                tree.remove(at: path[...])
            case .changed(let what):
                let version = revision.version - 1
                let migrated = try MigrationVersion.$value.withValue(version) { try codec.decode(Migrated<V>.self, from: tree.bytes(form)).state }
                guard let migrated else {
                    throw Unreadable(description: "version \(revision.version) of its form changed (\(what)) and "
                                     + "\(V.self).migrate(from: \(version), decoder:) returns nil")
                }
                return migrated
            }
        }
        return try codec.decode(V.self, from: tree.bytes(form))
    }

    /// `bytes`, today's encoding of a state of `type`, as a build whose form of it was
    /// `recorded` would have encoded the same state: the revisions after `recorded` undone.
    /// `nil` when one cannot be undone (a field removed, a form changed), or the form is newer.
    static func recordedForm(of bytes: [UInt8], type: any VersionedState.Type, recorded: Int, codec: any PayloadCodec) -> [UInt8]? {
        guard recorded < type.stateVersion, let (read, form) = try? StoredValue.read(bytes) else { return nil }
        var tree = read
        for revision in revisions(of: type, after: recorded).reversed() {
            switch revision.change {
            case .added(let path, _):
                tree.remove(at: path[...])
            case .renamed(let path, let newName):
                tree.rename(at: (path.dropLast() + [newName])[...], to: path[path.count - 1], form: form)
            case .removed, .changed:
                return nil
            }
        }
        return tree.bytes(form)
    }

    /// The revisions of `type` after version `stored`, up to today's, oldest first.
    private static func revisions(of type: any VersionedState.Type, after stored: Int) -> [StateRevision] {
        type.stateRevisions.enumerated()
            .filter { $0.element.version > stored && $0.element.version <= type.stateVersion }
            .sorted { ($0.element.version, $0.offset) < ($1.element.version, $1.offset) }
            .map(\.element)
    }

    private static func read(_ bytes: [UInt8], stored: Int, current: Int) throws -> (StoredValue, StoredValue.Form) {
        do {
            return try StoredValue.read(bytes)
        } catch {
            throw Unreadable(description: "its form of version \(stored) cannot be brought to version \(current): \(error)")
        }
    }
}

/// The version ``Migrated`` hands to ``VersionedState/migrate(from:decoder:)``.
private enum MigrationVersion {
    @TaskLocal static var value = 0
}

/// A value whose decoding is a ``VersionedState``'s migration (so that any codec's decoder reads
/// the old form).
private struct Migrated<V: VersionedState>: Decodable {
    let state: V?

    init(from decoder: any Decoder) throws {
        state = try V.migrate(from: MigrationVersion.value, decoder: decoder)
    }
}

/// The state forms an instance's digests were recorded under (rule V2), as replay reads them
/// from snapshots and entry notes, or as a journal notes them: workflow name to version, 1 when
/// absent. Touched only by the thread replaying or running the host.
struct RecordedForms {
    private(set) var versions: [String: Int]
    private var checkedStructure: UInt64?
    private var differs = false

    init(_ versions: [String: Int] = [:]) {
        self.versions = versions
    }

    /// Takes the versions an entry noted.
    mutating func learn(_ noted: [String: Int]) {
        guard !noted.isEmpty else { return }
        versions.merge(noted) { $1 }
        checkedStructure = nil
    }

    /// Whether a state of `tree` is of another form than the one recorded for its workflow.
    /// Asked per entry; looked at again only when the tree's nodes or the versions change.
    mutating func differ(in tree: any RuntimeTree) -> Bool {
        if checkedStructure == tree.structureVersion { return differs }
        checkedStructure = tree.structureVersion
        differs = !changes(in: tree).isEmpty
        return differs
    }

    /// The workflows of `tree` whose states' form is not the recorded one, with this build's version.
    func changes(in tree: any RuntimeTree) -> [String: Int] {
        var changed: [String: Int] = [:]
        for (path, state) in tree.nodeStates() {
            guard let name = path.segments.last?.workflowType else { continue }
            let version = StateForms.version(of: type(of: state))
            if version != versions[name] ?? 1 { changed[name] = version }
        }
        return changed
    }
}
