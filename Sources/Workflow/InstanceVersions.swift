/// The versions one running tree's code takes (rule V1): the code version its instance started
/// under, and its version markers, each fixed the first time the instance reaches it.
///
/// A version marker names a change of behaviour (`"fee"`); the build declares the versions of
/// it that its code supports (``HostConfiguration/versionMarkers``), and `apply` and `render` ask
/// which one to take (``ApplyContext/version(_:)``, ``RenderContext/version(_:)``). A new
/// instance takes the newest of every marker its build declares. An instance started before a
/// marker existed takes, where its logged entries reach the marker, version 1 (the code before
/// the change), and where it reaches it live, the newest: that choice is logged with the entry,
/// so every replay takes the branch the instance took. Touched only by the thread running the
/// host. Opaque outside the runtime and the engine: actions reach it through their context.
public final class InstanceVersions {
    /// The code version the instance started under (`nil`: none was configured).
    package let codeVersion: String?
    /// The markers this build's code supports, each with the versions it can run.
    package let declared: [String: ClosedRange<Int>]
    /// Every marker the instance has fixed so far: logged, found by replay, or decided live.
    package private(set) var markers: [String: Int]
    /// Markers decided live and not yet handed to the journal (which logs them with the entry
    /// being recorded).
    package private(set) var decided: [String: Int] = [:]
    /// Whether the tree is replaying logged entries (an unlogged marker is then version 1).
    package var isReplaying = false
    /// The first marker the instance fixed at a version this build does not support.
    package private(set) var unsupported: UnsupportedVersion?
    private let programmerErrors: ProgrammerErrorPolicy

    package init(codeVersion: String?, declared: [String: ClosedRange<Int>], markers: [String: Int], programmerErrors: ProgrammerErrorPolicy) {
        self.codeVersion = codeVersion
        self.declared = declared
        self.markers = markers
        self.programmerErrors = programmerErrors
    }

    /// The newest version of every declared marker (a new instance's).
    package static func newest(of declared: [String: ClosedRange<Int>]) -> [String: Int] {
        declared.mapValues(\.upperBound)
    }

    /// The version of `name` this instance takes.
    package func version(_ name: String) -> Int {
        guard let supported = declared[name] else {
            programmerErrors.raise(
                "the version marker \"\(name)\" is not declared: add it to HostConfiguration.versionMarkers "
                    + "(DurableConfiguration.versionMarkers) with the versions this build supports")
            return 1
        }
        let version: Int
        if let fixed = markers[name] {
            version = fixed
        } else if isReplaying {
            // Logged before this build reached the marker: the code as it was before it.
            version = 1
            markers[name] = version
        } else {
            version = supported.upperBound
            markers[name] = version
            decided[name] = version
        }
        if !supported.contains(version), unsupported == nil {
            unsupported = UnsupportedVersion(marker: name, version: version, supported: supported)
        }
        return version
    }

    /// The markers decided live since the last call, for the journal to log.
    package func takeDecided() -> [String: Int] {
        guard !decided.isEmpty else { return [:] }
        defer { decided = [:] }
        return decided
    }

    /// Adds markers read from the log (an entry's, before replay applies it).
    package func learn(_ logged: [String: Int]) {
        for (name, version) in logged {
            markers[name] = version
            if let supported = declared[name], !supported.contains(version), unsupported == nil {
                unsupported = UnsupportedVersion(marker: name, version: version, supported: supported)
            }
        }
    }
}

/// A version marker an instance fixed at a version the running build does not support.
package struct UnsupportedVersion: Sendable, Hashable {
    package init(marker: String, version: Int, supported: ClosedRange<Int>) {
        self.marker = marker
        self.version = version
        self.supported = supported
    }

    package let marker: String
    package let version: Int
    package let supported: ClosedRange<Int>
}
