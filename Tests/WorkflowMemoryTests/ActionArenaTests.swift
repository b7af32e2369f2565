import WorkflowMemory
import Synchronization
import Testing

/// How many `Tracked` values of one test are alive, to see that an arena deinitializes what it
/// stored (each test has its own: tests may run at once).
private final class AliveCount: Sendable {
    let alive = Atomic<Int>(0)
    var value: Int { alive.load(ordering: .relaxed) }
}

private final class Tracked: Sendable {
    let value: Int
    let count: AliveCount
    init(_ value: Int, in count: AliveCount) {
        self.value = value
        self.count = count
        count.alive.add(1, ordering: .relaxed)
    }
    deinit { count.alive.subtract(1, ordering: .relaxed) }
}

private struct Wide: Equatable {
    var words: (UInt64, UInt64, UInt64, UInt64, UInt64) = (1, 2, 3, 4, 5)
    static func == (a: Wide, b: Wide) -> Bool { a.words == b.words }
}

private struct WithReference {
    var name: String
    var tracked: Tracked
}

private struct Empty: Equatable {}

@Suite("Action arena: a batch's actions stored unboxed and read in place")
struct ActionArenaTests {
    @Test("values of mixed sizes and alignments, over many chunks, read back as stored at aligned addresses")
    func mixedValuesReadBack() {
        let arena = ActionArena(expected: 4)
        var stored: [(ActionSlot, Int)] = []
        for index in 0..<5_000 {
            switch index % 4 {
            case 0: stored.append((arena.store(UInt8(truncatingIfNeeded: index)), index))
            case 1: stored.append((arena.store(index), index))
            case 2: stored.append((arena.store(Wide(words: (UInt64(index), 0, 0, 0, UInt64(index)))), index))
            default: stored.append((arena.store(Empty()), index))
            }
        }
        for (slot, index) in stored {
            switch index % 4 {
            case 0: #expect(arena.value(in: slot, as: UInt8.self) == UInt8(truncatingIfNeeded: index))
            case 1:
                #expect(slot.isAligned(to: MemoryLayout<Int>.alignment))
                #expect(arena.value(in: slot, as: Int.self) == index)
            case 2:
                #expect(slot.isAligned(to: MemoryLayout<Wide>.alignment))
                #expect(arena.value(in: slot, as: Wide.self) == Wide(words: (UInt64(index), 0, 0, 0, UInt64(index))))
            default: #expect(arena.value(in: slot, as: Empty.self) == Empty())
            }
        }
    }

    @Test("a value larger than a chunk gets room of its own; earlier values stay where they were")
    func largeValue() {
        let arena = ActionArena(expected: 1, chunkSize: 16)
        let small = arena.store(41)
        let wide = arena.store(Wide())
        let after = arena.store(UInt16(9))
        #expect(arena.value(in: small, as: Int.self) == 41)
        #expect(arena.value(in: wide, as: Wide.self) == Wide())
        #expect(arena.value(in: after, as: UInt16.self) == 9)
    }

    @Test("a slot is read only as the type stored in it")
    func typedRead() {
        let arena = ActionArena(expected: 2)
        let slot = arena.store(UInt32(7))
        #expect(slot.type == ObjectIdentifier(UInt32.self))
        #expect(arena.value(in: slot, as: Int32.self) == nil)
        #expect(arena.value(in: slot, as: UInt32.self) == 7)
    }

    @Test("values holding references are released with the arena, exactly once")
    func referencesReleased() {
        let count = AliveCount()
        do {
            let arena = ActionArena(expected: 2)
            var slots: [ActionSlot] = []
            for index in 0..<1_000 {
                slots.append(arena.store(WithReference(name: "action \(index)", tracked: Tracked(index, in: count))))
            }
            #expect(count.value == 1_000)
            let last = arena.value(in: slots[999], as: WithReference.self)
            #expect(last?.name == "action 999" && last?.tracked.value == 999)
        }
        #expect(count.value == 0)
    }

    @Test("a reset arena releases what it held, exactly once, and stores again as new; its values then go with it")
    func resetAndReuse() {
        let count = AliveCount()
        do {
            let arena = ActionArena(expected: 2, chunkSize: 64)
            for index in 0..<500 { _ = arena.store(Tracked(index, in: count)) }
            _ = arena.store(Wide())
            #expect(count.value == 500)
            arena.reset()
            #expect(count.value == 0)
            var slots: [(ActionSlot, Int)] = []
            for index in 0..<300 {
                slots.append((index % 2 == 0 ? arena.store(Tracked(index, in: count)) : arena.store(index), index))
            }
            for (slot, index) in slots {
                if index % 2 == 0 {
                    #expect(arena.value(in: slot, as: Tracked.self)?.value == index)
                } else {
                    #expect(slot.isAligned(to: MemoryLayout<Int>.alignment))
                    #expect(arena.value(in: slot, as: Int.self) == index)
                }
            }
            #expect(count.value == 150)
            arena.reset()
            arena.reset()
            #expect(count.value == 0)
            let last = arena.store(Tracked(7, in: count))
            #expect(arena.value(in: last, as: Tracked.self)?.value == 7)
        }
        #expect(count.value == 0)
    }
}
