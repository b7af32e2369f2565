import DurableWorkflow
import TestWorkflows
import Testing
import Workflow
import WorkflowStorage

private func counter(_ mode: DurableConfiguration.Mode = .strict, snapshotEvery: Int? = nil) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: DurableCounter.actions, snapshotEvery: snapshotEvery)
}

private func durableError(_ kind: DurableError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> DurableError? {
    let error = #expect(throws: DurableError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.kind == kind, "got \(String(describing: error))", sourceLocation: sourceLocation)
    return error
}

/// The engine's promises that rest on its store, checked through the public API over every backend.
@Suite("Storage contract: the durable engine on every backend")
struct EngineContractTests {
    @Test("an instance's state is rebuilt by replay in a new store value over the same backend", arguments: BackendKind.allCases)
    func replay(kind: BackendKind) async throws {
        let fresh = try kind.make()
        do {
            let host = try fresh.store.start(DurableCounter(step: 2), id: "c", configuration: counter())
            for amount in 1...10 { host.rendering.sink.send(.init(amount: amount)) }
            #expect(host.rendering.state == .init(count: 110, applied: 10))
            await host.stopAndWait()
        }
        let store = fresh.store
        let host = try store.resume(id: "c", as: DurableCounter.self, configuration: counter())
        #expect(host.rendering.state == .init(count: 110, applied: 10))
        host.rendering.sink.send(.init(amount: 1))
        #expect(try store.instance(id: "c")?.lastSequence == 12)
        #expect(try store.entries(of: "c").map(\.sequence) == Array(1...12))
        await host.stopAndWait()
    }

    @Test("grouped commits: what a flush acknowledged is there after resume", arguments: BackendKind.allCases)
    func groupedCommits(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let host = try fresh.store.start(DurableCounter(), id: "g", configuration: counter(.grouped))
        for _ in 1...500 { host.rendering.sink.send(.init(amount: 1)) }
        await host.flush()
        #expect(try fresh.store.instance(id: "g")?.lastSequence == 501)
        await host.stopAndWait()
        let resumed = try fresh.store.resume(id: "g", as: DurableCounter.self, configuration: counter(.grouped))
        #expect(resumed.rendering.state.count == 500)
        await resumed.stopAndWait()
    }

    @Test("many instances awaiting their own actions share commits, and each keeps its order", arguments: BackendKind.allCases)
    func manyInstances(kind: BackendKind) async throws {
        let fresh = try kind.make()
        var hosts: [WorkflowHost<DurableCounter>] = []
        for index in 0..<20 { hosts.append(try fresh.store.start(DurableCounter(), id: "i\(index)", configuration: counter(.grouped))) }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for amount in 1...25 { _ = await host.rendering.sink.sendAndWait(.init(amount: amount)) }
                }
            }
        }
        for (index, host) in hosts.enumerated() {
            #expect(host.rendering.state.count == 325)
            #expect(try fresh.store.instance(id: "i\(index)")?.lastSequence == 26)
            await host.stopAndWait()
        }
        for index in 0..<20 {
            let tree = try fresh.store.state(of: "i\(index)", as: DurableCounter.self, configuration: counter())
            #expect(try tree.rootState(as: DurableCounter.State.self) == .init(count: 325, applied: 25))
        }
    }

    @Test("snapshots shorten replay and agree with the full replay; time travel rebuilds any earlier state", arguments: BackendKind.allCases)
    func snapshotsAndTimeTravel(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let host = try fresh.store.start(DurableCounter(), id: "s", configuration: counter(snapshotEvery: 5))
        for amount in 1...12 { host.rendering.sink.send(.init(amount: amount)) }
        await host.stopAndWait()
        let info = try #require(try fresh.store.instance(id: "s"))
        #expect(info.lastSnapshot > 0 && info.lastSequence == 13)
        #expect(try fresh.store.verify(id: "s", as: DurableCounter.self, configuration: counter()).isConsistent)
        let early = try fresh.store.state(of: "s", as: DurableCounter.self, at: 4, configuration: counter())
        #expect(try early.rootState(as: DurableCounter.State.self) == .init(count: 6, applied: 3))
        let resumed = try fresh.store.resume(id: "s", as: DurableCounter.self, configuration: counter(snapshotEvery: 5))
        #expect(resumed.rendering.state == .init(count: 78, applied: 12))
        await resumed.stopAndWait()
    }

    @Test("an instance runs in one host at a time; a delete reaches the host that runs it, which stops and deletes it", arguments: BackendKind.allCases)
    func ownership(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let host = try fresh.store.start(DurableCounter(), id: "o", configuration: counter())
        _ = durableError(.instanceInUse) { _ = try fresh.store.resume(id: "o", as: DurableCounter.self, configuration: counter()) }
        _ = durableError(.instanceExists) { _ = try fresh.store.start(DurableCounter(), id: "o", configuration: counter()) }
        await host.stopAndWait()
        let second = try fresh.store.resume(id: "o", as: DurableCounter.self, configuration: counter())
        try await fresh.store.delete(id: "o", timeout: .seconds(10))
        #expect(try fresh.store.instance(id: "o") == nil)
        await second.stopAndWait()
        _ = durableError(.instanceNotFound) { _ = try fresh.store.resume(id: "o", as: DurableCounter.self, configuration: counter()) }
    }

    @Test("an unknown action type stops replay with a typed error naming the sequence, and the log is untouched", arguments: BackendKind.allCases)
    func unknownActionType(kind: BackendKind) async throws {
        let fresh = try kind.make()
        let host = try fresh.store.start(DurableCounter(), id: "u", configuration: counter())
        host.rendering.sink.send(.init(amount: 3))
        await host.stopAndWait()
        let error = durableError(.unknownActionType) {
            _ = try fresh.store.resume(id: "u", as: DurableCounter.self, configuration: DurableConfiguration())
        }
        #expect(error?.sequence == 2 && error?.actionTag == "counter.add")
        #expect(try fresh.store.entries(of: "u").count == 2)
    }

    @Test("status, listing, fork and import go through the store's index", arguments: BackendKind.allCases)
    func maintenance(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let host = try store.start(DurableCounter(), id: "m", configuration: counter())
        for amount in 1...5 { host.rendering.sink.send(.init(amount: amount)) }
        await host.stopAndWait()
        try store.fork(id: "m", at: 3, as: "m-at-3")
        let forked = try store.state(of: "m-at-3", as: DurableCounter.self, configuration: counter())
        #expect(try forked.rootState(as: DurableCounter.State.self) == .init(count: 3, applied: 2))
        try store.complete(id: "m")
        #expect(try store.instances(status: .completed).map(\.id) == ["m"])
        // A fork is paused (rule O3): no resume runs it until it is unpaused.
        #expect(try store.instances(status: .paused).map(\.id) == ["m-at-3"])
        #expect(try store.entries(of: "m-at-3").last?.actionTag == ControlEntry.pauseTag)
        let entries = try store.entries(of: "m")
        _ = durableError(.instanceExists) {
            try store.importInstance(id: "m", workflowType: String(reflecting: DurableCounter.self), status: .running, created: .now(), entries: entries)
        }
        try store.importInstance(id: "copy", workflowType: String(reflecting: DurableCounter.self), status: .running, created: .now(), entries: entries)
        #expect(try store.entries(of: "copy") == entries)
        let report = try store.check()
        #expect(report.isIntact && report.instances == 3 && report.entries == 6 + 4 + 6)
    }
}
