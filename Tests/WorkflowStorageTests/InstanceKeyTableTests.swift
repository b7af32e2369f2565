import TestSupport
import Testing
@testable import WorkflowLMDB

/// The LMDB commit's table from instance keys to values, against `Dictionary` as the model.
@Suite("Instance key table")
struct InstanceKeyTableTests {
    @Test("random inserts, updates, removals and emptyings leave what a dictionary holds")
    func matchesDictionary() {
        var generator = SeededGenerator(state: 7)
        // Dense keys (as a store hands them out), sparse ones, and keys that share their first slot.
        let keySets: [[UInt64]] = [
            Array(1...300),
            (0..<300).map { _ in generator.next() },
            (0..<300).map { UInt64($0) << 40 },
        ]
        for keys in keySets {
            var table = InstanceKeyTable<String>()
            var model: [UInt64: String] = [:]
            for step in 0..<20_000 {
                let key = keys[Int(generator.next() % UInt64(keys.count))]
                switch generator.next() % 10 {
                case 0..<5:
                    table[key] = "v\(step)"
                    model[key] = "v\(step)"
                case 5..<9:
                    table[key] = nil
                    model[key] = nil
                default:
                    if step % 7 == 0 {
                        table.removeAll()
                        model.removeAll()
                    }
                }
                #expect(table.count == model.count)
                #expect(table[key] == model[key])
            }
            for key in keys { #expect(table[key] == model[key]) }
        }
    }

    @Test("removing an entry keeps every entry that probed past it reachable")
    func removalInsideAChain() {
        var table = InstanceKeyTable<Int>()
        // 1,000 keys in a table of 2,048 slots: many share or overrun their first slots.
        for key in 1...1_000 { table[UInt64(key)] = key }
        for key in stride(from: 1, through: 1_000, by: 3) { table[UInt64(key)] = nil }
        for key in 1...1_000 {
            #expect(table[UInt64(key)] == (key % 3 == 1 ? nil : key))
        }
        #expect(table.count == 666)
    }

    @Test("an emptied table holds nothing and takes new entries in its old slots")
    func emptying() {
        var table = InstanceKeyTable<Int>()
        for round in 0..<5 {
            for key in 1...500 { table[UInt64(key)] = key + round }
            #expect(table.count == 500)
            #expect(table[250] == 250 + round)
            table.removeAll()
            #expect(table.isEmpty)
            #expect(table[250] == nil)
        }
    }
}
