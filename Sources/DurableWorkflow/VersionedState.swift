/// A node state whose stored form changes from one build to the next (rule V2).
///
/// Snapshots hold each node's encoded state, and digests (rule D4) are computed over it, so a
/// state type that gains, renames or drops a field no longer reads the snapshots of running
/// instances nor matches the digests their logs recorded. Declare the version of today's stored
/// form and what changed in each version since the first, and the engine
/// - reads a snapshot written under an older version by applying the changes to its stored form
///   (a field added gets its default, a renamed one its new key) before decoding it, and
/// - compares a digest recorded under an older version with today's state with the later changes
///   undone (the added fields left out, renamed keys given their old names),
///
/// so adding a defaulted field or renaming one deploys with determinism checks on. A change the
/// declarations cannot undo (``StateRevision/removed(_:in:)``, ``StateRevision/changed(in:_:)``)
/// leaves the digests recorded before it unchecked; a snapshot from before it is read by
/// ``migrate(from:decoder:)`` if you write one, else the instance is replayed from its first
/// entry (the log is the truth).
///
/// ```swift
/// struct State: Codable, VersionedState {
///     var items: [String] = []
///     var priority = 3        // added in version 2
///     var revision = 0        // was "counter" until version 3
///
///     static let stateVersion = 3
///     static let stateRevisions: [StateRevision] = [
///         .added("priority", default: 3, in: 2),
///         .renamed("counter", to: "revision", in: 3),
///     ]
/// }
/// ```
///
/// Adding an optional field needs none of this (a `nil` optional is not encoded), nor does a
/// rename that keeps the encoded key through `CodingKeys`.
public protocol VersionedState: Codable {
    /// The version of today's stored form: 1 for the first, raised by one with every change.
    static var stateVersion: Int { get }
    /// What changed in each version after the first (default: nothing declared).
    static var stateRevisions: [StateRevision] { get }
    /// Today's state from the stored form of `version`, for a stored form the revisions cannot
    /// bring up to date (a ``StateRevision/changed(in:_:)`` after `version`): `decoder` reads
    /// that form, as the revisions up to `version` left it. `nil` (the default) has the instance
    /// replayed from its first entry instead.
    static func migrate(from version: Int, decoder: any Decoder) throws -> Self?
}

extension VersionedState {
    public static var stateRevisions: [StateRevision] { [] }
    public static func migrate(from version: Int, decoder: any Decoder) throws -> Self? { nil }
}

/// One change of a ``VersionedState``'s stored form, made in `version`. Fields are named by
/// their encoded keys; a dotted name (`"shipping.priority"`) reaches into nested structures.
public struct StateRevision: Sendable, CustomStringConvertible {
    /// The version whose stored form has the change (the first that has it).
    public let version: Int
    let change: Change

    enum Change: Sendable {
        /// A field whose value in older forms is `encode(codec)`.
        case added(path: [String], encode: @Sendable (any PayloadCodec) throws -> [UInt8])
        case renamed(path: [String], to: String)
        case removed(path: [String])
        case changed(String)
    }

    /// A field added in `version`: older stored forms read as if it held `value`, and digests
    /// recorded under them leave it out.
    public static func added<Value: Encodable & Sendable>(_ field: String, default value: Value, in version: Int) -> StateRevision {
        StateRevision(version: version, change: .added(path: Self.path(field), encode: { codec in try codec.encode(value) }))
    }

    /// A field whose encoded key was `field` before `version` and `newName` from it on.
    public static func renamed(_ field: String, to newName: String, in version: Int) -> StateRevision {
        StateRevision(version: version, change: .renamed(path: Self.path(field), to: newName))
    }

    /// A field dropped in `version`: older stored forms read without it; digests recorded under
    /// them cannot be compared (its value is gone), and are not.
    public static func removed(_ field: String, in version: Int) -> StateRevision {
        StateRevision(version: version, change: .removed(path: Self.path(field)))
    }

    /// Any other change of the stored form in `version` (a field's type, a new encoding):
    /// ``VersionedState/migrate(from:decoder:)`` reads older snapshots; digests recorded under
    /// older forms are not compared.
    public static func changed(in version: Int, _ what: String) -> StateRevision {
        StateRevision(version: version, change: .changed(what))
    }

    private static func path(_ field: String) -> [String] { field.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    public var description: String {
        switch change {
        case .added(let path, _): "version \(version): added \(path.joined(separator: "."))"
        case .renamed(let path, let to): "version \(version): renamed \(path.joined(separator: ".")) to \(to)"
        case .removed(let path): "version \(version): removed \(path.joined(separator: "."))"
        case .changed(let what): "version \(version): \(what)"
        }
    }
}
