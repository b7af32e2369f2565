/// A hash table from instance keys to values: the maps a commit consults for every instance it
/// writes (the known ids, the cached state records, the journal's tails).
///
/// Instance keys are numbers the store hands out one after another, so a multiplicative hash
/// (the high bits of the key times an odd constant) spreads them over the slots without
/// `Hasher`'s keyed SipHash, which cost each lookup of a `Dictionary` more than the rest of it.
/// Emptying the table keeps its slots and touches none of them: each slot carries the generation
/// that filled it, and only slots of the current generation hold an entry (a value in an emptied
/// slot is released when the slot is filled again, or with the table). Open addressing with linear
/// probing; a removal moves the entries after it back, so a lookup stops at the first empty slot.
struct InstanceKeyTable<Value> {
    private struct Slot {
        var key: UInt64 = 0
        /// The table's generation when the slot was filled; 0: never, or removed.
        var generation: UInt32 = 0
        var value: Value?
    }

    private var slots: [Slot]
    private var generation: UInt32 = 1
    /// 64 minus the base-2 logarithm of the slot count: a key's first slot is its hash's top bits.
    private var shift: Int
    /// How many keys the table holds.
    private(set) var count = 0

    /// An empty table, which allocates its slots with its first key.
    init() {
        slots = []
        shift = 64
    }

    var isEmpty: Bool { count == 0 }

    /// The value for `key`; setting `nil` removes it.
    subscript(key: UInt64) -> Value? {
        get {
            guard let index = find(key) else { return nil }
            return slots[index].value
        }
        set {
            if let newValue { insert(newValue, for: key) } else { remove(key) }
        }
    }

    /// Removes every key, keeping the slots.
    mutating func removeAll() {
        guard count > 0 else { return }
        count = 0
        if generation == .max {
            for index in slots.indices { slots[index] = Slot() }
            generation = 1
        } else {
            generation += 1
        }
    }

    private func firstSlot(of key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    private func isFilled(_ index: Int) -> Bool { slots[index].generation == generation }

    private func find(_ key: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var index = firstSlot(of: key)
        while isFilled(index) {
            if slots[index].key == key { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    private mutating func insert(_ value: Value, for key: UInt64) {
        if (count + 1) * 4 > slots.count * 3 { grow() }
        let mask = slots.count - 1
        var index = firstSlot(of: key)
        while isFilled(index) {
            if slots[index].key == key {
                slots[index].value = value
                return
            }
            index = (index + 1) & mask
        }
        slots[index] = Slot(key: key, generation: generation, value: value)
        count += 1
    }

    private mutating func remove(_ key: UInt64) {
        guard var hole = find(key) else { return }
        let mask = slots.count - 1
        slots[hole] = Slot()
        count -= 1
        // Each entry after the hole, up to the next empty slot, moves into the hole unless its
        // first slot lies after the hole (cyclically, up to where it is): a lookup would not pass it.
        var index = hole
        while true {
            index = (index + 1) & mask
            guard isFilled(index) else { return }
            let first = firstSlot(of: slots[index].key)
            let stays = hole <= index ? (hole < first && first <= index) : (hole < first || first <= index)
            if stays { continue }
            slots[hole] = slots[index]
            slots[index] = Slot()
            hole = index
        }
    }

    private mutating func grow() {
        let old = slots
        let oldGeneration = generation
        let slotCount = max(16, old.count * 2)
        slots = Array(repeating: Slot(), count: slotCount)
        shift = 64 - slotCount.trailingZeroBitCount
        generation = 1
        count = 0
        for slot in old where slot.generation == oldGeneration {
            insert(slot.value!, for: slot.key)
        }
    }
}
