import Synchronization
import WorkflowLocks

/// A store that lives in this process's memory: for tests and previews. **Not durable**: every
/// instance, entry and snapshot is gone when the store is released or the process ends, and
/// ``CommitDurability`` is ignored. It keeps every other promise of ``StorageBackend`` (atomic
/// commits, claims, dense logs), as the contract suite checks.
/// Its signals (``signalStorage()``) live under the same lock, so delivery marks apply
/// atomically with the entries they are committed with.
public final class InMemoryStorage: StorageBackend {
    public let name = "memory"
    public let location: String
    public var isDurable: Bool { false }
    public var isReadOnly: Bool { false }

    private let state = Lock(Contents())
    private let commits = Atomic<UInt64>(0)
    private let subscribers = Lock<[WeakSubscriber]>([])

    private struct WeakSubscriber {
        weak var subscriber: InMemoryChangeFeed.Subscriber?
    }

    fileprivate struct Contents {
        var nextKey: UInt64 = 1
        var instances: [String: StoredInstance] = [:]
        /// By instance key: entries in sequence order, from sequence 1.
        var logs: [UInt64: [[UInt8]]] = [:]
        var snapshots: [UInt64: [UInt64: [UInt8]]] = [:]
        var signals = SignalContents()
        /// Control requests by instance id, in number order.
        var control: [String: [StoredControlRequest]] = [:]
        /// ``close()`` was called: the contents are gone and every call fails.
        var closed = false
    }

    /// Runs `body` on the contents under the lock, unless the store was closed.
    private func contents<R>(_ operation: String, _ body: (inout Contents) throws(StorageFailure) -> R) throws(StorageFailure) -> R {
        try state.withLock { (state) throws(StorageFailure) -> R in
            if state.closed { throw closedFailure(operation) }
            return try body(&state)
        }
    }

    private func closedFailure(_ operation: String) -> StorageFailure {
        failure(.closed, operation, "the store was closed (WorkflowStore.close()); an in-memory store's contents went with it",
                recovery: "Make a new store")
    }

    /// An empty store; `name` appears in messages as its location.
    public init(name: String = "memory") {
        self.location = name
    }

    public func create(_ new: NewInstance) throws(StorageFailure) -> StoredInstance? {
        guard new.entries.firstSequence == 1, !new.entries.isEmpty else {
            throw failure(.invalidInput, "create", "a new instance's log starts at sequence 1 with at least one entry")
        }
        return try contents("create") { state -> StoredInstance? in
            guard state.instances[new.id] == nil else { return nil }
            let key = state.nextKey
            state.nextKey += 1
            var log: [[UInt8]] = []
            new.entries.forEach { _, bytes in log.append(Array(bytes)) }
            let stored = StoredInstance(
                id: new.id, key: key, workflowType: new.workflowType, codec: new.codec, status: new.status, created: new.created,
                updated: new.created, lastSequence: new.entries.lastSequence, lastSnapshot: 0, claim: new.claim,
                codeVersion: new.codeVersion)
            state.instances[new.id] = stored
            state.logs[key] = log
            return stored
        }
    }

    public func instance(id: String) throws(StorageFailure) -> StoredInstance? {
        try contents("read instance") { $0.instances[id] }
    }

    public func instances() throws(StorageFailure) -> [StoredInstance] {
        try contents("list instances") { $0.instances.values.sorted { $0.id < $1.id } }
    }

    public func instanceIDs() throws(StorageFailure) -> [String] {
        try contents("list instances") { $0.instances.keys.sorted() }
    }

    public func claim(id: String, as claim: InstanceClaim, takingOverIf: (InstanceClaim) -> Bool) throws(StorageFailure) -> ClaimOutcome {
        try contents("claim") { state -> ClaimOutcome in
            guard var stored = state.instances[id] else { return .notFound }
            if !stored.claim.isNone, !takingOverIf(stored.claim) { return .held(by: stored.claim) }
            stored.claim = claim
            state.instances[id] = stored
            return .claimed(stored)
        }
    }

    public func release(id: String, claim: InstanceClaim) throws(StorageFailure) {
        try contents("release") { state in
            guard var stored = state.instances[id], stored.claim == claim else { return }
            stored.claim = .none
            state.instances[id] = stored
        }
    }

    public func setStatus(id: String, to status: InstanceStatus, at time: Int64, failure: String?) throws(StorageFailure) -> StoredInstance? {
        try contents("set status") { state -> StoredInstance? in
            guard var stored = state.instances[id] else { return nil }
            stored.status = status
            stored.updated = time
            stored.failure = status == .failed ? failure : nil
            state.instances[id] = stored
            return stored
        }
    }

    public func delete(id: String) throws(StorageFailure) -> Bool {
        try contents("delete") { state -> Bool in
            guard let stored = state.instances.removeValue(forKey: id) else { return false }
            state.logs[stored.key] = nil
            state.snapshots[stored.key] = nil
            return true
        }
    }

    public func commit(_ request: CommitRequest) throws(StorageFailure) -> [CommitOutcome] {
        defer { commits.add(1, ordering: .sequentiallyConsistent) }
        return try contents("commit") { (state) throws(StorageFailure) -> [CommitOutcome] in
            // Checked in full before anything is changed: the commit is all or nothing.
            var outcomes: [CommitOutcome] = []
            // The record of each instance that is written, as it stands before the commit.
            var written: [Int: StoredInstance] = [:]
            for changes in request.changes {
                guard let stored = state.instances[changes.id], stored.key == changes.key else {
                    outcomes.append(.refused(current: nil))
                    continue
                }
                guard stored.claim == changes.claim else {
                    outcomes.append(.refused(current: stored.claim))
                    continue
                }
                guard changes.entries.isEmpty || changes.entries.firstSequence == stored.lastSequence + 1 else {
                    throw failure(.invalidInput, "commit",
                                  "instance \(changes.id)'s entries start at \(changes.entries.firstSequence), after \(stored.lastSequence)")
                }
                if let mark = changes.deliveryMarks.first(where: { state.signals.isDelivered($0) }) {
                    outcomes.append(.alreadyDelivered(consumer: mark.consumer, version: mark.version))
                    continue
                }
                written[outcomes.count] = stored
                outcomes.append(.committed)
            }
            for (index, changes) in request.changes.enumerated() {
                guard var stored = written[index] else { continue }
                changes.entries.forEach { _, bytes in state.logs[stored.key, default: []].append(Array(bytes)) }
                for snapshot in changes.snapshots {
                    state.snapshots[stored.key, default: [:]][snapshot.sequence] = snapshot.bytes
                    stored.lastSnapshot = max(stored.lastSnapshot, snapshot.sequence)
                }
                for mark in changes.deliveryMarks { state.signals.apply(mark) }
                if !changes.entries.isEmpty {
                    stored.lastSequence = changes.entries.lastSequence
                    stored.updated = changes.updated
                }
                if let status = changes.status { stored.status = status }
                state.instances[stored.id] = stored
            }
            return outcomes
        }
    }

    public func sync() throws(StorageFailure) {
        try contents("sync") { _ in }
    }

    // MARK: Control requests

    public func postControlRequests(_ requests: [NewControlRequest]) throws(StorageFailure) -> [StoredControlRequest?] {
        defer { commits.add(1, ordering: .sequentiallyConsistent) }
        return try contents("post control requests") { state in requests.map { state.post($0) } }
    }


    public func pendingControlRequests() throws(StorageFailure) -> [StoredControlRequest] {
        try contents("read control requests") { state in
            state.control.keys.sorted().flatMap { id in state.control[id]!.filter { $0.answer == nil } }
        }
    }

    public func controlRequests(of id: String) throws(StorageFailure) -> [StoredControlRequest] {
        try contents("read control requests") { $0.control[id] ?? [] }
    }

    public func answerControlRequest(instance id: String, number: UInt64, answer: ControlAnswerRecord) throws(StorageFailure) -> Bool {
        defer { commits.add(1, ordering: .sequentiallyConsistent) }
        return try contents("answer a control request") { state -> Bool in
            guard let index = state.control[id]?.firstIndex(where: { $0.number == number }), state.control[id]![index].answer == nil else {
                return false
            }
            state.control[id]![index].answer = answer
            return true
        }
    }

    // MARK: Signals

    public func signalStorage() throws(StorageFailure) -> any SignalStorage {
        try contents("open signals") { _ in }
        return InMemorySignalStorage(storage: self)
    }

    /// How many commits (of instances or signals) the store has made.
    var commitCount: UInt64 { commits.load(ordering: .sequentiallyConsistent) }

    func changingSignals<R>(_ operation: String, _ body: (inout SignalContents) -> R) throws(StorageFailure) -> R {
        defer { commits.add(1, ordering: .sequentiallyConsistent) }
        return try contents(operation) { state in body(&state.signals) }
    }

    /// As ``changingSignals(_:_:)``, for a body that may throw anything (a signal handler).
    func changingSignals<R>(_ operation: String, throwing body: (inout SignalContents) throws -> R) throws -> R {
        defer { commits.add(1, ordering: .sequentiallyConsistent) }
        return try state.withLock { state throws -> R in
            if state.closed { throw closedFailure(operation) }
            return try body(&state.signals)
        }
    }

    func readingSignals<R>(_ operation: String, _ body: (SignalContents) -> R) throws(StorageFailure) -> R {
        try contents(operation) { body($0.signals) }
    }

    func subscribe() -> InMemoryChangeFeed.Subscriber {
        let subscriber = InMemoryChangeFeed.Subscriber()
        subscribers.withLock { $0.append(WeakSubscriber(subscriber: subscriber)) }
        return subscriber
    }

    func wakeSubscribers(except: InMemoryChangeFeed.Subscriber) {
        let live = subscribers.withLock { list in
            list.removeAll { $0.subscriber == nil }
            return list.compactMap(\.subscriber)
        }
        for subscriber in live where subscriber !== except { subscriber.wake() }
    }

    public func syncPeriodically(every interval: Duration) {}

    public func readEntries(
        of key: UInt64, from: UInt64, through: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        // Copied out, so that `visit` runs without the lock (it may call back into the store).
        let entries = try contents("read entries") { state -> ArraySlice<[UInt8]> in
            guard let log = state.logs[key], from >= 1, from <= through, from <= UInt64(log.count) else { return [] }
            return log[Int(from - 1)..<Int(min(through, UInt64(log.count)))]
        }
        var sequence = max(from, 1)
        for entry in entries {
            guard try entry.withUnsafeBytes({ try visit(sequence, $0) }) else { return }
            sequence += 1
        }
    }

    public func readSnapshots(of key: UInt64, atMost sequence: UInt64, _ visit: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let found = try contents("read snapshots") { state in
            (state.snapshots[key] ?? [:]).filter { $0.key <= sequence }.sorted { $0.key > $1.key }
        }
        for (sequence, bytes) in found {
            guard try bytes.withUnsafeBytes({ try visit(sequence, $0) }) else { return }
        }
    }

    public func putSnapshot(id: String, sequence: UInt64, bytes: [UInt8]) throws(StorageFailure) {
        try contents("put snapshot") { (state) throws(StorageFailure) in
            guard var stored = state.instances[id] else {
                throw failure(.notFound, "put snapshot", "no instance has the id \(id)")
            }
            state.snapshots[stored.key, default: [:]][sequence] = bytes
            stored.lastSnapshot = max(stored.lastSnapshot, sequence)
            state.instances[id] = stored
        }
    }

    public func statistics() throws(StorageFailure) -> StorageStatistics {
        try contents("statistics") { state in
            StorageStatistics(
                backend: name, formatVersion: 1, instances: state.instances.count,
                logEntries: state.logs.values.reduce(0) { $0 + $1.count },
                snapshots: state.snapshots.values.reduce(0) { $0 + $1.count },
                usedBytes: state.logs.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } })
        }
    }

    public func checkStructure(progress: (String) -> Void) -> [StoreDamage] { [] }

    public func copy(to destination: String) throws(StorageFailure) {
        throw failure(.invalidInput, "copy", "an in-memory store has no files to copy", recovery: "Export its instances with `wfctl export` instead")
    }

    /// Drops every instance, entry, snapshot and signal; calls after this fail with
    /// ``StorageFailure/Kind/closed``.
    public func close() {
        state.withLock { state in
            state = Contents()
            state.closed = true
        }
    }

    private func failure(_ kind: StorageFailure.Kind, _ operation: String, _ detail: String, recovery: String = "") -> StorageFailure {
        StorageFailure(kind: kind, backend: name, location: location, operation: operation, detail: detail, recovery: recovery)
    }
}

extension InMemoryStorage.Contents {
    /// Records `request` as its instance's next one; `nil` when the instance does not exist.
    mutating func post(_ request: NewControlRequest) -> StoredControlRequest? {
        guard instances[request.instance] != nil else { return nil }
        var requests = control[request.instance] ?? []
        // Old answers go; the last request stays, so that numbers go on from it.
        let last = requests.last?.number ?? 0
        requests.removeAll { $0.number != last && ControlRequestRetention.expired($0, now: request.requested) }
        let stored = StoredControlRequest(instance: request.instance, number: last + 1, request: request, answer: nil)
        requests.append(stored)
        control[request.instance] = requests
        return stored
    }
}
