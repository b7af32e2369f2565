import Workflow

/// How an instance names its nodes and its workers' idempotency keys (issue 59, point 7), fixed
/// when it starts: a reserved version marker of its props entry (and of its snapshots), so its
/// digests, snapshot keys and idempotency keys stay what they were for its whole life.
///
/// - Version 2, every instance started since issue 59: node paths name types without module
///   prefixes but with their generic arguments (`/Payment/TaskWorkflow<BankReply>[charge]`), and
///   idempotency keys begin with the instance's id and incarnation (`pay-2~k3j9x1…`): an id
///   deleted and started again gets keys of its own, so a bank that dedupes by key does not
///   answer the new payment with the old one's result.
/// - No marker (instances started before): the names they were written with (a type's name after
///   its last dot, `BankReply>`), keys without an incarnation. Their logs read unchanged.
enum InstanceNaming {
    /// The reserved marker (tags and markers beginning with `$` are the engine's own).
    static let marker = "$names"
    /// The version of every instance started since issue 59.
    static let current = 2

    /// How an instance whose log fixed `markers` names its nodes.
    static func pathNaming(markers: [String: Int]) -> NodePath.Naming {
        markers[marker] == current ? .readable : .legacy
    }

    /// What its workers' idempotency keys begin with: its id and, from version 2 on, its
    /// incarnation (when it was created, in base 36).
    static func idempotencyPrefix(id: String, created: Int64, markers: [String: Int]) -> String {
        guard markers[marker] == current else { return id }
        return "\(id)~\(String(UInt64(bitPattern: created), radix: 36))"
    }
}
