import Foundation
import Workflow
import WorkflowLocks
import WorkflowStorage

/// Hands the control requests recorded in a store (rule O2) to this process's hosts of their
/// instances, and writes their answers: one per store and process, on a thread of its own that
/// sleeps on the store's change feed (a request posted by another process, or another host,
/// announces itself: a datagram on LMDB, `NOTIFY` on PostgreSQL) and polls as a fallback.
///
/// Requests of an instance are handed over in number order, each once to each host of the
/// instance; the host applies them (``WorkflowRuntime`` logs each as an entry first) and answers
/// through ``answer(instance:number:outcome:)``. A request whose host stops before applying it is
/// handed to the instance's next host, here or in another process: it stays pending in the store
/// until answered.
final class ControlDispatcher: Sendable {
    /// The hosts of this process that take requests, by instance.
    private struct Target {
        weak var receiver: (any ControlReceiver)?
        let token: UInt64
        /// The highest request number handed to this host.
        var handedOver: UInt64 = 0
    }

    private struct State {
        var targets: [String: Target] = [:]
        var nextToken: UInt64 = 0
        /// The loop that runs while some host takes requests, and its feed.
        var loop: Loop?
    }

    /// One run of the loop: from the first host that registers to the last that leaves (so that a
    /// store with no host running holds no thread, and lets go of its files once released).
    private final class Loop: Sendable {
        let feed: (any ChangeFeed)?
        let stopping = Lock(false)
        let finished = DispatchSemaphore(value: 0)

        init(feed: (any ChangeFeed)?) { self.feed = feed }
    }

    private let backend: any StorageBackend
    private let pollInterval: Duration
    private let state = Lock(State())
    /// Who answers, in answers: `pid 4711 on host-a`.
    let identity: String

    init(backend: any StorageBackend) {
        self.backend = backend
        // A database server is asked at most once a second without a hint; LMDB is read in
        // microseconds.
        self.pollInterval = backend.concurrentCalls > 1 ? .seconds(1) : .milliseconds(250)
        self.identity = ControlDispatcher.processIdentity
    }

    static var processIdentity: String { "pid \(getpid()) on \(ProcessInfo.processInfo.hostName)" }

    /// From now on, requests for `instance` go to `receiver` (a host just started or resumed):
    /// those pending are handed over at once. Returns the token that ``unregister(_:token:)`` takes.
    func register(_ instance: String, receiver: any ControlReceiver) -> UInt64 {
        let (token, loop, started) = state.withLock { state -> (UInt64, Loop?, Bool) in
            state.nextToken += 1
            state.targets[instance] = Target(receiver: receiver, token: state.nextToken)
            if let loop = state.loop { return (state.nextToken, loop, false) }
            // The feed of the store's signals is the store's change feed (a hint of any commit,
            // announced or polled); a store without one is polled.
            let loop = Loop(feed: try? backend.signalStorage().changeFeed())
            state.loop = loop
            return (state.nextToken, loop, true)
        }
        if started {
            let thread = Thread { [self] in run(loop!) }
            thread.name = "workflow-control"
            thread.start()
        } else {
            loop?.feed?.wakeSelf()
        }
        return token
    }

    /// The host of `instance` that registered with `token` stopped; the last one to leave ends
    /// the loop (and waits for it).
    func unregister(_ instance: String, token: UInt64) {
        let ending = state.withLock { state -> Loop? in
            if state.targets[instance]?.token == token { state.targets[instance] = nil }
            guard state.targets.isEmpty, let loop = state.loop else { return nil }
            state.loop = nil
            return loop
        }
        if let ending { end(ending) }
    }

    /// Records the answer to request `number` of `instance`, and tells waiting requesters.
    func answer(instance: String, number: UInt64, outcome: ControlOutcome) {
        let answer = ControlAnswerRecord(outcome: outcome, answeredBy: "host of \(identity)")
        _ = try? backend.answerControlRequest(instance: instance, number: number, answer: answer)
        let feed = state.withLock { $0.loop?.feed }
        if let feed {
            feed.announce()
        } else {
            (try? backend.signalStorage().changeFeed())?.announce()
        }
    }

    /// Ends the loop (the store closes) and waits for it.
    func stop() {
        let ending = state.withLock { state -> Loop? in
            state.targets = [:]
            defer { state.loop = nil }
            return state.loop
        }
        if let ending { end(ending) }
    }

    private func end(_ loop: Loop) {
        loop.stopping.withLock { $0 = true }
        loop.feed?.wakeSelf()
        loop.finished.wait()
    }

    private func run(_ loop: Loop) {
        while !loop.stopping.withLock({ $0 }) {
            handOver()
            if let feed = loop.feed {
                _ = feed.wait(timeout: pollInterval)
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        loop.finished.signal()
    }

    /// Hands every pending request of an instance with a host here to that host, in order.
    private func handOver() {
        guard state.withLock({ !$0.targets.isEmpty }) else { return }
        guard let pending = try? backend.pendingControlRequests(), !pending.isEmpty else { return }
        var deliveries: [(any ControlReceiver, ControlCommand)] = []
        state.withLock { state in
            for request in pending {
                guard var target = state.targets[request.instance], let receiver = target.receiver,
                      request.number > target.handedOver else { continue }
                target.handedOver = request.number
                state.targets[request.instance] = target
                deliveries.append((receiver, ControlCommand(request)))
            }
        }
        for (receiver, command) in deliveries { receiver.receive(command) }
    }
}

extension ControlCommand {
    /// The command a stored request asks for.
    init(_ stored: StoredControlRequest) {
        let verb: Verb = switch stored.request.verb {
        case .cancel: .cancel(deadline: stored.request.deadline.map { .nanoseconds($0) })
        case .terminate: .terminate
        case .pause: .pause
        case .unpause: .unpause
        case .delete: .delete
        }
        self.init(verb: verb, number: stored.number, reason: stored.request.reason)
    }
}

extension ControlAnswerRecord {
    /// The record of what a host made of a request.
    init(outcome: ControlOutcome, answeredBy: String) {
        let now = WallTime.now().nanosecondsSinceEpoch
        switch outcome {
        case .applied(let sequence):
            self.init(outcome: .applied, sequence: sequence, detail: "applied", answeredBy: answeredBy, answered: now)
        case .alreadyApplied:
            self.init(outcome: .unchanged, sequence: nil, detail: "applied before", answeredBy: answeredBy, answered: now)
        case .unchanged(let detail):
            self.init(outcome: .unchanged, sequence: nil, detail: detail, answeredBy: answeredBy, answered: now)
        case .refused(let detail):
            self.init(outcome: .refused, sequence: nil, detail: detail, answeredBy: answeredBy, answered: now)
        }
    }
}
