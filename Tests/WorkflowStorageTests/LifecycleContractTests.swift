import DurableWorkflow
import TestWorkflows
import Testing
import Workflow
import WorkflowStorage

private func checkout(_ mode: DurableConfiguration.Mode = .strict) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: Checkout.actions)
}

private func counter(_ mode: DurableConfiguration.Mode = .strict) -> DurableConfiguration {
    DurableConfiguration(mode: mode, actions: DurableCounter.actions)
}

/// An instance's life as the log holds it (start with a first action, finishing, resuming many),
/// checked through the public API over every backend.
@Suite("Storage contract: instance lifecycle on every backend")
struct LifecycleContractTests {
    @Test("start(with:) commits the props and the first action as one commit; a resume replays both", arguments: BackendKind.allCases)
    func startWithFirstAction(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let host = try store.start(Checkout(total: 10), id: "o1", with: Checkout.Open(items: 3), configuration: checkout())
        #expect(host.rendering.state == .init(items: 3, paid: 0))
        let entries = try store.entries(of: "o1")
        #expect(entries.map(\.sequence) == [1, 2])
        #expect(entries.map(\.actionTag) == [LogEntry.propsTag, "checkout.open"])
        #expect(entries[1].digest != nil)
        await host.stopAndWait()
        let resumed = try store.resume(id: "o1", as: Checkout.self, configuration: checkout())
        #expect(resumed.rendering.state == .init(items: 3, paid: 0))
        await resumed.stopAndWait()
        #expect(try store.verify(id: "o1", as: Checkout.self, configuration: checkout()).isConsistent)
    }

    @Test("closing the store under a running host fails the host at its next commit with kind closed, nothing of it written; a durable store opened again resumes the instance as committed",
          arguments: BackendKind.allCases)
    func closeUnderRunningHost(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let host = try store.start(DurableCounter(), id: "c", configuration: counter())
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 1)))
        try store.close()
        #expect(await host.rendering.sink.sendAndWait(.init(amount: 5)) == false)
        let failure = host.failure as? DurableError
        #expect(failure?.kind == .storage && failure?.storageFailure?.kind == .closed, "\(String(describing: host.failure))")
        guard let reopen = fresh.reopen else { return }
        let reopened = WorkflowStore(backend: try reopen())
        defer { try? reopened.close() }
        let resumed = try reopened.resume(id: "c", as: DurableCounter.self, configuration: counter())
        #expect(resumed.rendering.state == .init(count: 1, applied: 1))
        await resumed.stopAndWait()
    }

    @Test("start(with:) an action the registry cannot decode writes nothing", arguments: BackendKind.allCases)
    func startWithUnregisteredAction(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let configuration = DurableConfiguration(actions: ActionRegistry(Checkout.Pay.self))
        let error = #expect(throws: DurableError.self) {
            _ = try store.start(Checkout(total: 10), id: "o2", with: Checkout.Open(items: 3), configuration: configuration)
        }
        #expect(error?.kind == .actionNotRegistered && error?.actionTag == "checkout.open")
        #expect(try store.instance(id: "o2") == nil)
    }

    @Test("a finishing workflow is completed by the commit of its final action; completion returns its output, in every mode",
          arguments: BackendKind.allCases, [DurableConfiguration.Mode.strict, .grouped])
    func finishing(kind: BackendKind, mode: DurableConfiguration.Mode) async throws {
        let fresh = try kind.make(), store = fresh.store
        let host = try store.start(Checkout(total: 3), id: "f", with: Checkout.Open(items: 2), configuration: checkout(mode))
        let outputs = Task {
            var seen: [Checkout.Output] = []
            for await output in host.outputs { seen.append(output) }
            return seen
        }
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        #expect(try store.instance(id: "f")?.status == .running)
        let last = host.rendering.pay
        last.send(.init(amount: 2))
        let receipt = Checkout.Receipt(items: 2, paid: 3)
        #expect(try await host.completion == .receipt(receipt))
        #expect(try store.instance(id: "f")?.status == .completed)
        #expect(try store.instance(id: "f")?.lastSequence == 4)
        // The host stops by itself once it has finished; later sends are refused as finished or stopped.
        await #expect(throws: SendError.self) { try await last.sendAndCommit(.init(amount: 1)) }
        #expect(await outputs.value == [.paidSoFar(1), .receipt(receipt)])
        #expect(try store.entries(of: "f").count == 4)
        // Resuming a completed instance finishes it again with the same output.
        let again = try store.resume(id: "f", as: Checkout.self, configuration: checkout(mode))
        #expect(try await again.completion == .receipt(receipt))
        await again.stopAndWait()
        #expect(try store.instance(id: "f")?.status == .completed)
    }

    @Test("once completion returns, the host has let go of the instance: resuming it at once never finds it held",
          arguments: BackendKind.allCases)
    func completionReleasesTheInstance(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        // The race this guards: completion settled before the stopping host released its claim.
        for round in 0..<40 {
            let id = "r\(round)"
            let host = try store.start(Checkout(total: 1), id: id, with: Checkout.Open(items: 1), configuration: checkout(.grouped))
            host.rendering.pay.send(.init(amount: 1))
            #expect(try await host.completion == .receipt(.init(items: 1, paid: 1)))
            let again = try store.resume(id: id, as: Checkout.self, configuration: checkout(.grouped))
            #expect(try await again.completion == .receipt(.init(items: 1, paid: 1)))
        }
    }

    @Test("a host stopped before its workflow finishes fails completion; the instance goes on when resumed", arguments: BackendKind.allCases)
    func stoppedBeforeFinishing(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let host = try store.start(Checkout(total: 3), id: "s", with: Checkout.Open(items: 1), configuration: checkout())
        let waiting = Task { () -> Result<Checkout.Output, StoppedBeforeFinishing> in
            do throws(StoppedBeforeFinishing) { return .success(try await host.completion) } catch { return .failure(error) }
        }
        try await host.rendering.pay.sendAndCommit(.init(amount: 1))
        await host.stopAndWait()
        guard case .failure(let error) = await waiting.value else {
            Issue.record("completion returned although the workflow did not finish")
            return
        }
        #expect(error.failure == nil)
        let resumed = try store.resume(id: "s", as: Checkout.self, configuration: checkout())
        try await resumed.rendering.pay.sendAndCommit(.init(amount: 2))
        #expect(try await resumed.completion == .receipt(.init(items: 1, paid: 3)))
        #expect(try store.instance(id: "s")?.status == .completed)
    }

    @Test("startOrResume starts a missing instance and resumes an existing one", arguments: BackendKind.allCases)
    func startOrResume(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        let first = try store.startOrResume(Checkout(total: 5), id: "sr", with: Checkout.Open(items: 4), configuration: checkout())
        try await first.rendering.pay.sendAndCommit(.init(amount: 2))
        await first.stopAndWait()
        let second = try store.startOrResume(Checkout(total: 5), id: "sr", with: Checkout.Open(items: 9), configuration: checkout())
        #expect(second.rendering.state == .init(items: 4, paid: 2))
        await second.stopAndWait()
        #expect(try store.entries(of: "sr").count == 3)
        let plain = try store.startOrResume(DurableCounter(), id: "plain", configuration: counter())
        plain.rendering.sink.send(.init(amount: 1))
        await plain.stopAndWait()
        let again = try store.startOrResume(DurableCounter(), id: "plain", configuration: counter())
        #expect(again.rendering.state.count == 1)
        await again.stopAndWait()
    }

    @Test("resumeAll resumes every running instance of a type; one whose log cannot be replayed is marked failed and stops no other",
          arguments: BackendKind.allCases)
    func resumeAll(kind: BackendKind) async throws {
        let fresh = try kind.make(), store = fresh.store
        for (index, id) in ["a", "c", "d"].enumerated() {
            let host = try store.start(DurableCounter(), id: id, configuration: counter())
            host.rendering.sink.send(.init(amount: index + 1))
            await host.stopAndWait()
        }
        let done = try store.start(Checkout(total: 1), id: "other-type", with: Checkout.Open(items: 1), configuration: checkout())
        await done.stopAndWait()
        try store.complete(id: "c")
        // "b" logs an action at a version nobody registered.
        let good = try store.entries(of: "a")
        let bad = LogEntry(sequence: 2, time: good[1].time, origin: good[1].origin, nodePath: good[1].nodePath,
                           actionTag: good[1].actionTag, actionVersion: 2, payload: good[1].payload, digest: nil)
        try store.importInstance(id: "b", workflowType: String(reflecting: DurableCounter.self), status: .running, created: .now(),
                                 entries: [good[0], bad])

        let results = try store.resumeAll(DurableCounter.self, configuration: counter())
        #expect(results.map(\.id) == ["a", "b", "d"])
        #expect(results[0].host?.rendering.state.count == 1)
        #expect(results[1].error?.kind == .unknownActionType)
        #expect(results[2].host?.rendering.state.count == 3)
        for result in results { await result.host?.stopAndWait() }
        #expect(try store.instances(status: .failed).map(\.id) == ["b"])
        let second = try store.resumeAll(DurableCounter.self, configuration: counter())
        #expect(second.map(\.id) == ["a", "d"])
        for result in second { await result.host?.stopAndWait() }

        // Fixed (a decoder for version 2), the failed instance resumes and runs again.
        var fixed = counter()
        fixed.actions.register(DurableCounter.Add.self, version: 2) { bytes, codec in try codec.decode(DurableCounter.Add.self, from: bytes) }
        let resumed = try store.resume(id: "b", as: DurableCounter.self, configuration: fixed)
        #expect(resumed.rendering.state.count == 1)
        await resumed.stopAndWait()
        #expect(try store.instance(id: "b")?.status == .running)
    }
}
