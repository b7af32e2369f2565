#if Postgres
import WorkflowStorage

/// How a store's running instances are spread over its live hosts (those that take over
/// instances): each instance goes to one of the hosts that run its code version, the one that
/// scores highest for it (rendezvous hashing: a score mixes a stable hash of the instance's id
/// with the host's id). Every host computes the same spread from the same rows of `wf_host`.
/// When a host joins, only the instances it now scores highest on move, to it (about one in the
/// number of hosts); when one leaves, only its own move, each to the host that scores next.
struct HostSpread {
    /// The live hosts that take over instances, each with the code versions it runs.
    let hosts: [(id: Int64, versions: SupportedCodeVersions)]

    /// The host instance `id`, started under `codeVersion`, goes to; `nil` when no live host runs that version.
    func host(for id: String, codeVersion: String?) -> Int64? {
        let hash = Self.stableHash(id)
        var best: (host: Int64, score: UInt64)?
        for host in hosts where host.versions.contains(codeVersion) {
            let score = Self.mix(hash ^ UInt64(bitPattern: host.id))
            if let found = best, found.score > score || (found.score == score && found.host < host.id) { continue }
            best = (host.id, score)
        }
        return best?.host
    }

    /// Whether `host` is one of the live hosts that take over instances.
    func contains(_ host: Int64) -> Bool { hosts.contains { $0.id == host } }

    /// FNV-1a of the id's UTF-8 bytes: the same in every process (unlike `hashValue`).
    static func stableHash(_ id: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// SplitMix64's finalizer: every bit of `value` moves about half of the result's, so that
    /// the scores of one id on different hosts (and of one host for different ids) are unrelated.
    static func mix(_ value: UInt64) -> UInt64 {
        var mixed = value
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        return mixed ^ (mixed >> 31)
    }
}
#endif
