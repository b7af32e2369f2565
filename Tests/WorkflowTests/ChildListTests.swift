import Testing
import Workflow

/// Renders one counter per key, in the order given; a counter's output adds to the list's total.
struct CounterList: Workflow, Sendable {
    var keys: [String]

    struct Rendering: Sendable {
        let counters: [String: Counter.Rendering]
        let total: Int
    }

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<CounterList>) -> Rendering {
        var counters: [String: Counter.Rendering] = [:]
        for key in keys {
            counters[key] = context.render(Counter(), key: key) { output in
                AnyWorkflowAction<CounterList> { total in
                    total += output
                    return nil
                }
            }
        }
        return Rendering(counters: counters, total: state)
    }
}

@Suite("Keyed children across render passes (R4)")
struct ChildListTests {
    /// A host over `keys` where counter `keys[i]` has been incremented `i + 1` times.
    private func counted(_ keys: [String], log: EventLog? = nil) -> WorkflowHost<CounterList> {
        let observers: [any WorkflowObserver] = log.map { [RecordingObserver(log: $0)] } ?? []
        let host = WorkflowHost(workflow: CounterList(keys: keys), configuration: .init(observers: observers))
        for (index, key) in keys.enumerated() {
            for _ in 0...index { host.rendering.counters[key]!.increment() }
        }
        return host
    }

    private func counts(_ host: WorkflowHost<CounterList>) -> [String: Int] {
        host.rendering.counters.mapValues(\.count)
    }

    @Test("children declared in another order keep their state; none ends or starts")
    func reorder() {
        let log = EventLog()
        let host = counted(["a", "b", "c", "d"], log: log)
        let before = log.all.count
        host.update(workflow: CounterList(keys: ["d", "b", "a", "c"]))
        #expect(counts(host) == ["a": 1, "b": 2, "c": 3, "d": 4])
        host.update(workflow: CounterList(keys: ["c", "d", "a", "b"]))
        #expect(counts(host) == ["a": 1, "b": 2, "c": 3, "d": 4])
        #expect(!log.all[before...].contains { $0.hasPrefix("start") || $0.hasPrefix("end") })
    }

    @Test("a child inserted in the middle starts fresh; one removed from the middle or the end ends; the others keep state")
    func insertAndRemove() {
        let log = EventLog()
        let host = counted(["a", "b", "c"], log: log)
        host.update(workflow: CounterList(keys: ["a", "x", "b", "c"]))
        #expect(counts(host) == ["a": 1, "x": 0, "b": 2, "c": 3])
        host.update(workflow: CounterList(keys: ["a", "x", "c"]))
        #expect(counts(host) == ["a": 1, "x": 0, "c": 3])
        #expect(log.all.contains("end /CounterList/Counter[b]"))
        host.update(workflow: CounterList(keys: ["a", "x"]))
        #expect(counts(host) == ["a": 1, "x": 0])
        #expect(log.all.contains("end /CounterList/Counter[c]"))
        host.update(workflow: CounterList(keys: ["a", "x", "c", "b"]))
        #expect(counts(host) == ["a": 1, "x": 0, "c": 0, "b": 0])
        host.update(workflow: CounterList(keys: []))
        #expect(counts(host).isEmpty)
        #expect(log.count { $0.hasPrefix("end /CounterList/Counter") } == 6)
    }

    @Test("a sink from a rendering before a reorder still reaches its own child")
    func sinkAfterReorder() {
        let host = counted(["a", "b"])
        let oldB = host.rendering.counters["b"]!
        host.update(workflow: CounterList(keys: ["b", "a"]))
        oldB.increment()
        #expect(counts(host) == ["a": 1, "b": 3])
        oldB.sink.send(.emit)
        #expect(host.rendering.total == 3)
    }

    @Test("a key declared twice is reported whether the pass keeps the previous order or not")
    func duplicates() {
        let errors = EventLog()
        let host = WorkflowHost(
            workflow: CounterList(keys: ["a", "b"]), configuration: .init(programmerErrors: .report { errors.append($0) }))
        host.update(workflow: CounterList(keys: ["a", "a"]))
        host.update(workflow: CounterList(keys: ["b", "a", "b"]))
        host.update(workflow: CounterList(keys: ["x", "x"]))
        #expect(errors.all.count == 3)
        #expect(errors.all.allSatisfy { $0.contains("CounterList rendered the child") && $0.contains("twice in one render pass") })
    }
}
