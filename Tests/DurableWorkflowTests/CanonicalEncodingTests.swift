import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import WorkflowLMDB

@Suite("Canonical encoding: equal values give equal bytes in every process (D9)")
struct CanonicalEncodingTests {
    @Test("sets and dictionaries without String or Int keys encode to the same bytes in other processes, binary and JSON (issue 22, 2)",
          arguments: ["binary", "json"])
    func sameBytesAcrossProcesses(codecName: String) throws {
        let codec: any PayloadCodec = codecName == "json" ? JSONPayloadCodec() : BinaryPayloadCodec()
        let mine = try codec.encode(TagBook.sampleState(count: 40))
        let expected = mine.map { String($0, radix: 16) }.joined(separator: " ")
        // Each process seeds its hashes differently: three children, three hash orders.
        for _ in 0..<3 {
            let child = try ChildProcess(["canonical-encode", "40", codecName], mergeStandardError: true)
            let line = child.readLine()
            #expect(try child.waitForExit() == 0)
            let same = line == expected
            #expect(same, "the child encoded the sample state otherwise than this process")
        }
    }

    @Test("equal sets built in different orders, and with different capacities, encode alike and decode back")
    func sameBytesInProcess() throws {
        let codec = BinaryPayloadCodec()
        var grown = Set<String>(minimumCapacity: 1024)
        for index in (0..<200).reversed() { grown.insert("item-\(index)") }
        let plain = Set((0..<200).map { "item-\($0)" })
        #expect(try codec.encode(grown) == codec.encode(plain))
        #expect(try codec.decode(Set<String>.self, from: codec.encode(plain)) == plain)
        let state = TagBook.sampleState(count: 30)
        #expect(try codec.decode(TagBook.State.self, from: codec.encode(state)) == state)
        let keyed: [TagBook.Pair: Int] = Dictionary(uniqueKeysWithValues: (0..<50).map { (TagBook.Pair(left: "k\($0)", right: $0), $0) })
        var rebuilt = [TagBook.Pair: Int](minimumCapacity: 512)
        for (key, value) in keyed.reversed() { rebuilt[key] = value }
        #expect(try codec.encode(keyed) == codec.encode(rebuilt))
        #expect(try codec.decode([TagBook.Pair: Int].self, from: codec.encode(keyed)) == keyed)
    }

    @Test("the JSON codec orders sets and pairs canonically and leaves every other value as JSONEncoder writes it")
    func jsonCodec() throws {
        let codec = JSONPayloadCodec()
        var grown = Set<String>(minimumCapacity: 1024)
        for index in (0..<200).reversed() { grown.insert("item-\(index)") }
        let plain = Set((0..<200).map { "item-\($0)" })
        #expect(try codec.encode(grown) == codec.encode(plain))
        #expect(try codec.decode(Set<String>.self, from: codec.encode(plain)) == plain)
        let state = TagBook.sampleState(count: 30)
        #expect(try codec.decode(TagBook.State.self, from: codec.encode(state)) == state)

        struct Plain: Codable, Equatable {
            var when = Date(timeIntervalSince1970: 1_700_000_000.25)
            var blob = Data([1, 2, 3, 250])
            var link = URL(string: "https://example.com/a?b=c")!
            var id = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
            var amount = Decimal(string: "12.5")!
            var nested: [[String: [Int?]]] = [["b": [1, nil], "a": []]]
            var optional: Double? = nil
        }
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys]
        #expect(try codec.encode(Plain()) == Array(foundation.encode(Plain())))
        #expect(try codec.decode(Plain.self, from: codec.encode(Plain())) == Plain())
    }

    @Test("an instance with a Set in its state, written by another process, resumes and verifies here")
    func resumeAcrossProcesses() throws {
        let dir = TemporaryDirectory("canonical-resume")
        let child = try ChildProcess(["tagbook-write", dir.path, "60"], mergeStandardError: true)
        #expect(child.readLine() == "done 60")
        #expect(try child.waitForExit() == 0)
        let store = try WorkflowStore.open(path: dir.path)
        let report = try store.verify(id: "tags", as: TagBook.self, configuration: DurableConfiguration(actions: TagBook.actions))
        #expect(report.isConsistent, "\(String(describing: report.problem))")
        let host = try store.resume(id: "tags", as: TagBook.self, configuration: DurableConfiguration(actions: TagBook.actions))
        #expect(host.rendering.state == TagBook.sampleState(count: 60))
    }

    @Test("an instance whose digests were recorded in another process's hash order resumes and verifies with checksRecordedDigests off; the divergence names the node, shows its states and hints at hash order")
    func digestEscapeHatch() throws {
        let dir = TemporaryDirectory("canonical-escape")
        let child = try ChildProcess(["hashorder-write", dir.path, "40"], mergeStandardError: true)
        #expect(child.readLine() == "done 40")
        #expect(try child.waitForExit() == 0)
        let store = try WorkflowStore.open(path: dir.path)
        let error = expectDurableError(.nonDeterministic) {
            _ = try store.resume(id: "old", as: HashOrderBook.self, configuration: HashOrderBook.configuration)
        }
        #expect(error?.nodePath == "/HashOrderBook")
        let text = error?.description ?? ""
        #expect(text.contains("hash order") && text.contains("checksRecordedDigests = false"), "\(text)")
        #expect(text.contains("after this entry, replayed here: [\"tag-"), "\(text)")
        #expect(text.contains("before it (sequence"), "\(text)")

        var unchecked = HashOrderBook.configuration
        unchecked.checksRecordedDigests = false
        let report = try store.verify(id: "old", as: HashOrderBook.self, configuration: unchecked)
        #expect(report.isConsistent, "\(String(describing: report.problem))")
        let host = try store.resume(id: "old", as: HashOrderBook.self, configuration: unchecked)
        #expect(host.rendering.state.tags == Set((0..<40).map { "tag-\($0)" }))
        host.rendering.sink.send(.init(name: "new"))
        #expect(host.failure == nil)
    }
}
