/// The children a node rendered, in declaration order, and the matching of a new render pass's
/// declarations against them.
///
/// Render passes almost always declare the same children in the same order, so a declaration is
/// first compared with the child at the same position in the previous pass: while every
/// declaration matches its position, the list is only walked (no copying, no hashing, no
/// reference counting). The first declaration that does not match switches the pass to matching
/// by key through hash indexes, which is also how a key declared twice in one pass is caught.
struct ChildList {
    struct Slot {
        let key: ChildKey
        let node: any AnyWorkflowNode
        /// The same node, handed out without reference counting (`node` keeps it alive).
        let unmanaged: Unmanaged<AnyObject>

        init(key: ChildKey, node: any AnyWorkflowNode) {
            self.key = key
            self.node = node
            self.unmanaged = Unmanaged.passUnretained(node as AnyObject)
        }
    }

    /// What a declaration found.
    enum Match {
        /// The child rendered under this key in the previous pass: it lives on (the list holds it).
        case kept(Unmanaged<AnyObject>)
        /// A child already declared under this key in this pass (a programmer error).
        case duplicate(Unmanaged<AnyObject>)
        /// No child under this key: the caller creates one and calls ``add(_:node:)``.
        case new
    }

    /// A pass that left the previous order: this pass's children and the indexes by key.
    private struct Reordered {
        var current: [Slot]
        var claimed: [Bool]
        var currentIndex: [ChildKey: Int]
        var previousIndex: [ChildKey: Int]
    }

    /// The children of the previous pass (while a pass runs in order, its first `matched` are
    /// also this pass's children).
    private var previous: [Slot] = []
    private var matched = 0
    private var reordered: Reordered?

    var isEmpty: Bool { previous.isEmpty && reordered == nil }

    /// The children of the latest pass, in declaration order (asked outside a pass).
    var nodes: [any AnyWorkflowNode] { previous.map(\.node) }

    /// Matches a declaration of this pass; a kept child is recorded as declared.
    mutating func match(_ key: ChildKey) -> Match {
        if reordered == nil, matched < previous.count, previous[matched].key == key {
            // Same child at the same position: every earlier declaration of this pass matched its
            // own position, and the previous pass's keys are distinct, so this is no duplicate.
            matched += 1
            return .kept(previous[matched - 1].unmanaged)
        }
        return matchByKey(key)
    }

    private mutating func matchByKey(_ key: ChildKey) -> Match {
        if reordered == nil { startReordering() }
        if let earlier = reordered!.currentIndex[key] { return .duplicate(reordered!.current[earlier].unmanaged) }
        guard let found = reordered!.previousIndex[key], !reordered!.claimed[found] else { return .new }
        reordered!.claimed[found] = true
        reordered!.currentIndex[key] = reordered!.current.count
        reordered!.current.append(previous[found])
        return .kept(previous[found].unmanaged)
    }

    private mutating func startReordering() {
        var state = Reordered(
            current: Array(previous[..<matched]),
            claimed: Array(repeating: false, count: previous.count),
            currentIndex: [:], previousIndex: [:])
        for index in 0..<matched { state.claimed[index] = true }
        for (offset, slot) in state.current.enumerated() { state.currentIndex[slot.key] = offset }
        for (offset, slot) in previous.enumerated() { state.previousIndex[slot.key] = offset }
        reordered = state
    }

    /// Records a child created in this pass.
    mutating func add(_ key: ChildKey, node: any AnyWorkflowNode) {
        if reordered == nil { startReordering() }
        reordered!.currentIndex[key] = reordered!.current.count
        reordered!.current.append(Slot(key: key, node: node))
    }

    /// Ends the pass: the children of the previous pass that were not declared again are handed
    /// to `end`, and this pass's children become the previous ones.
    mutating func finishPass(ending end: (any AnyWorkflowNode) -> Void) {
        if let state = reordered {
            reordered = nil
            for index in previous.indices where !state.claimed[index] { end(previous[index].node) }
            previous = state.current
        } else if matched < previous.count {
            for slot in previous[matched...] { end(slot.node) }
            previous.removeSubrange(matched...)
        }
        matched = 0
    }

    /// Removes every child, handing each to `end`.
    mutating func removeAll(ending end: (any AnyWorkflowNode) -> Void) {
        let everyone = reordered.map { state in
            state.current + previous.indices.filter { !state.claimed[$0] }.map { previous[$0] }
        } ?? previous
        reordered = nil
        previous.removeAll()
        matched = 0
        for slot in everyone { end(slot.node) }
    }
}
