/// The code versions a build runs (rule V4): the instances it claims, resumes and takes over.
/// An instance whose code version is not among them is left to a build that runs it, so a mixed
/// fleet drains: hosts of the old build finish the old instances while new instances start on
/// hosts of the new one.
public struct SupportedCodeVersions: Sendable, Hashable, CustomStringConvertible {
    /// The versions run; `nil`: every version.
    public let versions: Set<String>?
    /// Whether instances started under no code version are run (by a build that sets one).
    public let runsUnversioned: Bool

    /// Every code version, and instances started under none (the default).
    public static let all = SupportedCodeVersions(versions: nil, runsUnversioned: true)

    /// Only instances started under one of `versions`, and when `unversioned`, those started
    /// under no code version (before the fleet configured one).
    public static func only(_ versions: Set<String>, unversioned: Bool = false) -> SupportedCodeVersions {
        SupportedCodeVersions(versions: versions, runsUnversioned: unversioned)
    }

    private init(versions: Set<String>?, runsUnversioned: Bool) {
        self.versions = versions
        self.runsUnversioned = runsUnversioned
    }

    /// Whether an instance started under `codeVersion` is run.
    public func contains(_ codeVersion: String?) -> Bool {
        guard let versions else { return true }
        guard let codeVersion else { return runsUnversioned }
        return versions.contains(codeVersion)
    }

    public var description: String {
        guard let versions else { return "every code version" }
        let listed = versions.sorted().map { "\"\($0)\"" }
        return (listed + (runsUnversioned ? ["none"] : [])).joined(separator: ", ")
    }
}
