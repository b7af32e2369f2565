import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowLocks

/// Holds the committing thread in the first commit of a later entry than the start's (an
/// observer's `didCommit` runs on the thread that committed, before anything else is committed)
/// until the test opens it.
private final class HeldCommit: DurableObserver {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)
    private let held = Lock(false)

    func didCommit(instance: String, batchSize: Int, lastSequence: UInt64, duration: Duration) {
        guard lastSequence > 1, held.withLock({ held in defer { held = true }; return !held }) else { return }
        entered.signal()
        opened.wait()
    }

    /// Waits (up to a minute) until a commit is held.
    func waitUntilHeld() -> Bool { entered.wait(timeout: .now() + 60) == .success }
    func open() { opened.signal() }
}

/// Counts actions applied, in every host it observes.
private final class AppliedActions: WorkflowObserver {
    private let applied = Lock(0)
    var count: Int { applied.withLock { $0 } }

    func actionWillApply(_ event: ActionEvent) -> ((_ stateAfter: Any, _ output: Any?) -> Void)? {
        { [applied] _, _ in applied.withLock { $0 += 1 } }
    }
}

/// Starts the instance "holder", whose first commit after its start the returned gate holds.
private func startHolder(in store: WorkflowStore, mode: DurableConfiguration.Mode) throws -> (HeldCommit, WorkflowHost<DurableCounter>) {
    let gate = HeldCommit()
    var configuration = counterConfiguration(mode)
    configuration.observers = [gate]
    return (gate, try store.start(DurableCounter(), id: "holder", configuration: configuration))
}

/// Write transactions committed in `store` so far.
private func transactions(_ store: WorkflowStore) throws -> UInt64 {
    try #require(try store.statistics().lastTransactionID)
}

@Suite("The store's commit pipeline: instances share commits; one instance's failure is its own")
struct CommitPipelineTests {
    @Test("batches of 20 instances that wait while another commit is written are committed together, in one transaction, each in order")
    func waitingInstancesShareOneTransaction() async throws {
        let dir = TemporaryDirectory("pipeline-share")
        let store = try WorkflowStore.open(path: dir.path)
        let (gate, holder) = try startHolder(in: store, mode: .grouped(maxBatch: 1, maxDelay: .seconds(3600)))
        let configuration = counterConfiguration(.grouped(maxBatch: 1, maxDelay: .seconds(3600)))
        let hosts = try (0..<20).map { try store.start(DurableCounter(), id: "i\($0)", configuration: configuration) }

        holder.rendering.sink.send(.init(amount: 1))
        #expect(gate.waitUntilHeld())
        let before = try transactions(store)
        for (index, host) in hosts.enumerated() {
            for amount in 1...3 { host.rendering.sink.send(.init(amount: amount * (index + 1))) }
        }
        #expect(try store.instance(id: "i0")?.lastSequence == 1, "nothing is committed while the committer is held")
        gate.open()
        for host in hosts { await host.flush() }
        await holder.flush()
        #expect(try transactions(store) - before == 1, "the 60 entries of 20 instances were written in one transaction")
        for (index, host) in hosts.enumerated() {
            #expect(host.rendering.state == .init(count: 6 * (index + 1), applied: 3))
            let amounts = try store.entries(of: "i\(index)").dropFirst().map { entry in
                try JSONDecoder().decode(DurableCounter.Add.self, from: Data(try #require(BinaryPayloadCodec.jsonText(entry.payload)).utf8)).amount
            }
            #expect(amounts == [1, 2, 3].map { $0 * (index + 1) })
            await host.stopAndWait()
        }
        await holder.stopAndWait()
    }

    @Test("an instance whose action cannot be encoded fails alone: the transaction is written again without it, and the others' entries are committed")
    func failingInstanceLeftOut() async throws {
        let dir = TemporaryDirectory("pipeline-isolation")
        let store = try WorkflowStore.open(path: dir.path)
        let (gate, holder) = try startHolder(in: store, mode: .grouped(maxBatch: 1, maxDelay: .seconds(3600)))
        let picky = try store.start(Picky(), id: "picky", configuration: Picky.configuration(.grouped(maxBatch: 1, maxDelay: .seconds(3600))))
        let configuration = counterConfiguration(.grouped(maxBatch: 1, maxDelay: .seconds(3600)))
        let hosts = try (0..<5).map { try store.start(DurableCounter(), id: "i\($0)", configuration: configuration) }

        holder.rendering.sink.send(.init(amount: 1))
        #expect(gate.waitUntilHeld())
        let before = try transactions(store)
        hosts[0].rendering.sink.send(.init(amount: 1))
        picky.rendering.sink.send(.init(value: 5))
        picky.rendering.sink.send(.init(value: -1))
        for host in hosts.dropFirst() { host.rendering.sink.send(.init(amount: 1)) }
        gate.open()
        for host in hosts { await host.flush() }
        await picky.flush()
        let error = try #require(picky.failure as? DurableError)
        #expect(error.kind == .notCodable && error.instance == "picky" && error.sequence == 3)
        #expect(try store.instance(id: "picky")?.lastSequence == 1, "nothing of the failing instance's batches was written")
        for (index, host) in hosts.enumerated() {
            #expect(host.failure == nil)
            #expect(try store.instance(id: "i\(index)")?.lastSequence == 2)
        }
        // One for the five others' entries; the failed host releases its claim in one of its own.
        let used = try transactions(store) - before
        #expect(used <= 2, "the others' entries took \(used - 1) transactions")
        await picky.stopAndWait()
        let resumed = try store.resume(id: "picky", as: Picky.self, configuration: Picky.configuration(.strict))
        #expect(resumed.rendering.values == [])
        await resumed.stopAndWait()
        for host in hosts { await host.stopAndWait() }
        await holder.stopAndWait()
    }

    @Test("strict hosts sending on several threads while a commit is written share the next synced transaction")
    func strictHostsShareACommit() async throws {
        let dir = TemporaryDirectory("pipeline-strict")
        let store = try WorkflowStore.open(path: dir.path)
        let (gate, holder) = try startHolder(in: store, mode: .strict)
        let hosts = try (0..<8).map { try store.start(DurableCounter(), id: "s\($0)", configuration: counterConfiguration(.strict)) }

        // The holder's send commits on a thread of its own, which the gate then holds.
        let holderThread = Thread { holder.rendering.sink.send(.init(amount: 1)) }
        holderThread.start()
        #expect(gate.waitUntilHeld())
        let before = try transactions(store)
        let started = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        for host in hosts {
            Thread {
                started.signal()
                host.rendering.sink.send(.init(amount: 2))
                finished.signal()
            }.start()
        }
        for _ in hosts { started.wait() }
        // Each send blocks until its entry is committed: none can be while the committer is held.
        #expect(finished.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
        gate.open()
        for _ in hosts { #expect(finished.wait(timeout: .now() + 60) == .success) }
        let used = try transactions(store) - before
        #expect(used <= 2, "8 strict commits took \(used) transactions")
        for (index, host) in hosts.enumerated() {
            #expect(host.rendering.state.count == 2)
            #expect(try store.instance(id: "s\(index)")?.lastSequence == 2)
            await host.stopAndWait()
        }
        await holder.stopAndWait()
    }

    @Test("strict sendAndWait callers whose commit would wait for another one's hold no thread meanwhile, and share the next transaction")
    func strictAwaitersShareACommit() async throws {
        let dir = TemporaryDirectory("pipeline-strict-await")
        let store = try WorkflowStore.open(path: dir.path)
        let (gate, holder) = try startHolder(in: store, mode: .strict)
        let applied = AppliedActions()
        var configuration = counterConfiguration(.strict)
        configuration.host.observers = [applied]
        let hosts = try (0..<10).map { try store.start(DurableCounter(), id: "w\($0)", configuration: configuration) }

        let holderThread = Thread { holder.rendering.sink.send(.init(amount: 1)) }
        holderThread.start()
        #expect(gate.waitUntilHeld())
        let before = try transactions(store)
        let clients = Task {
            await withTaskGroup(of: Bool.self) { group in
                for host in hosts { group.addTask { await host.rendering.sink.sendAndWait(.init(amount: 2)) } }
                return await group.reduce(true) { $0 && $1 }
            }
        }
        // Ten callers on a pool of a thread or two: each is applied only if none holds its thread.
        // Watched from a thread of its own, which opens the gate in any case.
        let seen = Lock((applied: 0, committed: UInt64(0)))
        let opener = Thread {
            let deadline = ContinuousClock.now + .seconds(20)
            while applied.count < hosts.count, ContinuousClock.now < deadline { usleep(5_000) }
            usleep(100_000)
            let committed = (try? store.instance(id: "w0")?.lastSequence) ?? 0
            seen.withLock { $0 = (applied.count, committed) }
            gate.open()
        }
        opener.start()
        #expect(await clients.value)
        let (appliedWhileHeld, committedWhileHeld) = seen.withLock { $0 }
        #expect(appliedWhileHeld == hosts.count, "only \(appliedWhileHeld) of \(hosts.count) actions were applied while a commit was held")
        #expect(committedWhileHeld == 1, "nothing is committed while the committer is held")
        let used = try transactions(store) - before
        #expect(used == 1, "10 awaited strict commits took \(used) transactions")
        for host in hosts {
            #expect(host.rendering.state.count == 2)
            await host.stopAndWait()
        }
        await holder.stopAndWait()
    }

    @Test("a host's rendering observer that blocks holds up neither the store's commits nor the other instances' awaited actions: a committer never runs a host's callbacks")
    func blockedObserverHoldsNoCommit() async throws {
        let dir = TemporaryDirectory("pipeline-blocked-observer")
        let store = try WorkflowStore.open(path: dir.path)
        let observed = try store.start(DurableCounter(), id: "observed", configuration: counterConfiguration(.grouped))
        let others = try (0..<8).map { try store.start(DurableCounter(), id: "other\($0)", configuration: counterConfiguration(.grouped)) }
        // The observer blocks the thread that calls it (no test task's: it waits asynchronously).
        let entered = Lock(false), opened = DispatchSemaphore(value: 0)
        let observation = observed.observeRenderings { rendering in
            guard rendering.state.count == 1 else { return }
            entered.withLock { $0 = true }
            opened.wait()
        }
        let blocked = Task { await observed.rendering.sink.sendAndWait(.init(amount: 1)) }
        let deadline = ContinuousClock.now + .seconds(60)
        while !entered.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(entered.withLock { $0 }, "the observer was called")
        // While the observer blocks the thread releasing its host's commit, the others' actions
        // are committed and acknowledged, many rounds of them.
        let acknowledged = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { clients in
                    for host in others {
                        clients.addTask {
                            for _ in 0..<20 { _ = await host.rendering.sink.sendAndWait(.init(amount: 1)) }
                        }
                    }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return false
            }
            let first = await group.next() ?? false
            // Timed out: the observer lets go, so that whatever it held up can end.
            if !first { opened.signal() }
            group.cancelAll()
            return first
        }
        #expect(acknowledged, "the other instances' actions were acknowledged while the observer blocked")
        if acknowledged { opened.signal() }
        #expect(await blocked.value)
        #expect(observed.rendering.state.count == 1)
        for host in others { #expect(host.rendering.state.count == 20) }
        observation.cancel()
        await observed.stopAndWait()
        for host in others { await host.stopAndWait() }
    }

    @Test("50 instances, each driven by its own task with sendAndWait and sends, keep dense, ordered logs that resume to their live state; their snapshots agree with full replay")
    func manyClientsKeepTheirOrder() async throws {
        let dir = TemporaryDirectory("pipeline-many")
        let store = try WorkflowStore.open(path: dir.path)
        let modes: [DurableConfiguration.Mode] = [.grouped(maxBatch: 3, maxDelay: .zero), .strict, .grouped, .processCrashSafe]
        // Every other instance snapshots often: its batches, handed back emptied once committed,
        // must carry only their own snapshots and entries.
        func configuration(_ index: Int) -> DurableConfiguration {
            counterConfiguration(modes[index % modes.count], snapshotEvery: index % 2 == 1 ? 7 : nil)
        }
        let hosts = try (0..<50).map { index in
            try store.start(DurableCounter(step: index + 1), id: "c\(index)", configuration: configuration(index))
        }
        let rounds = TestLoad.scaled(200)
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for round in 1...rounds {
                        if round % 3 == 0 {
                            _ = await host.rendering.sink.sendAndWait(.init(amount: round))
                        } else {
                            host.rendering.sink.send(.init(amount: round))
                        }
                    }
                    await host.flush()
                }
            }
        }
        let total = (1...rounds).reduce(0, +)
        for (index, host) in hosts.enumerated() {
            #expect(host.failure == nil)
            #expect(host.rendering.state == .init(count: total * (index + 1), applied: rounds))
            await host.stopAndWait()
            #expect(try store.entries(of: "c\(index)").map(\.sequence) == Array(1...UInt64(rounds + 1)))
            let report = try store.verify(id: "c\(index)", as: DurableCounter.self, configuration: configuration(index))
            #expect(report.problem == nil)
            #expect(index % 2 == 0 || (report.snapshotSequence > 0 && report.snapshotSequence % 7 == 0))
            let resumed = try store.resume(id: "c\(index)", as: DurableCounter.self, configuration: configuration(index))
            #expect(resumed.rendering.state == .init(count: total * (index + 1), applied: rounds))
            await resumed.stopAndWait()
        }
    }

    @Test("instances whose awaited actions alternate between two types, each batch reused for the next, log every entry under its own tag and payload, and resume to their live state")
    func reusedBatchesKeepTheirTargetsApart() async throws {
        let dir = TemporaryDirectory("pipeline-targets")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(mode: .grouped(maxBatch: 1, maxDelay: .seconds(3600)), actions: Checkout.actions)
        let hosts = try (0..<8).map {
            try store.start(Checkout(total: 1_000_000), id: "c\($0)", with: Checkout.Open(items: 1), configuration: configuration)
        }
        // Steps that find a batch's kept target, miss it and add one, and add more than a batch keeps.
        let opens = (0..<24).map { $0 % 3 == 0 || $0 % 5 == 0 }
        await withTaskGroup(of: Void.self) { group in
            for host in hosts {
                group.addTask {
                    for (step, open) in opens.enumerated() {
                        if open {
                            _ = await host.rendering.open.sendAndWait(.init(items: step + 2))
                        } else {
                            _ = await host.rendering.pay.sendAndWait(.init(amount: step + 1))
                        }
                    }
                }
            }
        }
        let paid = opens.enumerated().filter { !$0.element }.map { $0.offset + 1 }.reduce(0, +)
        let items = opens.lastIndex(of: true)! + 2
        for (index, host) in hosts.enumerated() {
            #expect(host.failure == nil)
            #expect(host.rendering.state == .init(items: items, paid: paid))
            await host.stopAndWait()
            let logged = try store.entries(of: "c\(index)").filter { !$0.isProps }.dropFirst()
            #expect(logged.map(\.actionTag) == opens.map { $0 ? Checkout.Open.tag : Checkout.Pay.tag })
            for (step, entry) in zip(opens.indices, logged) {
                let json = Data(try #require(BinaryPayloadCodec.jsonText(entry.payload)).utf8)
                if opens[step] {
                    #expect(try JSONDecoder().decode(Checkout.Open.self, from: json).items == step + 2)
                } else {
                    #expect(try JSONDecoder().decode(Checkout.Pay.self, from: json).amount == step + 1)
                }
                #expect(entry.nodePath == NodePath(segments: [.init(workflowType: String(reflecting: Checkout.self), key: "")]))
            }
            let resumed = try store.resume(id: "c\(index)", as: Checkout.self, configuration: configuration)
            #expect(resumed.rendering.state == .init(items: items, paid: paid))
            await resumed.stopAndWait()
        }
    }
}
