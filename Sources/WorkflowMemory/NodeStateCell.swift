/// Where a live node's state lies, and the state's type: a node's state stays at one address for
/// the node's whole life, so a digest can read every state in place, commit after commit, without
/// a call per node. A cell is valid while its tree's `RuntimeTree.structureVersion` is the one it
/// was read at (a node that ends frees its state).
public struct NodeStateCell {
    @usableFromInline let address: UnsafeRawPointer
    /// The `ObjectIdentifier` of the state's type.
    public let type: ObjectIdentifier

    @usableFromInline
    init<State>(_ storage: UnsafeMutablePointer<State>) {
        address = UnsafeRawPointer(storage)
        type = ObjectIdentifier(State.self)
    }

    /// Runs `body` with the address of the state, a value of the type `type` names, for the
    /// duration of the call.
    @inlinable
    public func withUnsafeAddress<Result>(_ body: (UnsafeRawPointer) throws -> Result) rethrows -> Result {
        try body(address)
    }
}
