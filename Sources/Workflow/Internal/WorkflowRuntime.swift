import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The host's engine: a first-in-first-out queue of work and the single drainer that applies it.
///
/// Whoever enqueues while nobody is draining becomes the drainer: it applies that item (action,
/// cascade, one render pass, effects) and every item that arrived meanwhile, then lets go. So a
/// send on an idle host is applied before `send` returns; a send that arrives while an action is
/// being applied (on the drainer's own thread) or while another thread drains is queued and
/// applied right after, in order: never recursed, never dropped, never concurrent.
final class WorkflowRuntime<Root: Workflow & Sendable>: ActionQueue, @unchecked Sendable
where Root.Rendering: Sendable, Root.Output: Sendable {
    // @unchecked Sendable: the stored properties below the queue are touched only by the current
    // drainer. The `inbox` mutex hands the drainer role to one thread at a time (`draining`), and
    // its lock/unlock orders each drainer's writes before the next drainer's reads.

    private struct Inbox {
        var queue = FIFO<QueueItem>()
        var draining = false
    }

    private enum Phase: UInt8 {
        case idle, applying, rendering, releasing
    }

    private let inbox = Mutex(Inbox())
    private let drainerThread = Atomic<UInt>(0)
    private let phase = Atomic<UInt8>(Phase.idle.rawValue)

    let publisher = RenderingPublisher<Root.Rendering>()
    let outputs: AsyncStream<Root.Output>
    private let outputContinuation: AsyncStream<Root.Output>.Continuation

    // Drainer-only state.
    @exclusivity(unchecked) private var context: RuntimeContext!
    @exclusivity(unchecked) private var root: WorkflowNode<Root>!
    @exclusivity(unchecked) private var pendingOutputs: [Root.Output] = []
    @exclusivity(unchecked) private var callbacks: [UInt64: @Sendable (Any) -> Void] = [:]
    @exclusivity(unchecked) private var stopped = false

    init(workflow: Root, observers: [any WorkflowObserver], programmerErrors: ProgrammerErrorPolicy) {
        (outputs, outputContinuation) = AsyncStream.makeStream(of: Root.Output.self)
        context = RuntimeContext(queue: self, observers: observers, programmerErrors: programmerErrors)
        // The first render pass runs here, with this thread as the drainer.
        inbox.withLock { $0.draining = true }
        let me = currentThread()
        drainerThread.store(me, ordering: .relaxed)
        root = WorkflowNode(workflow: workflow, path: NodePath(segments: [
            .init(workflowType: NodePath.typeName(Root.self), key: "")
        ]), runtime: context)
        root.outputHandler = { [unowned self] output in self.pendingOutputs.append(output) }
        renderAndRelease()
        drain(me, alreadyDraining: true)
    }

    // MARK: Queue

    func enqueue(_ item: QueueItem) {
        let me = currentThread()
        if drainerThread.load(ordering: .relaxed) == me, phase.load(ordering: .relaxed) == Phase.rendering.rawValue {
            context.programmerErrors.raise(
                "\(describe(item)) was sent during a render pass of \(context.renderingWorkflow); send from UI callbacks, workers or side effects, never from render")
        }
        let becomeDrainer = inbox.withLock { inbox -> Bool in
            inbox.queue.append(item)
            if inbox.draining { return false }
            inbox.draining = true
            return true
        }
        if becomeDrainer { drain(me, alreadyDraining: false) }
    }

    private func drain(_ me: UInt, alreadyDraining: Bool) {
        if !alreadyDraining { drainerThread.store(me, ordering: .relaxed) }
        while true {
            let next = inbox.withLock { inbox -> QueueItem? in
                if let item = inbox.queue.popFirst() { return item }
                drainerThread.store(0, ordering: .relaxed)
                inbox.draining = false
                return nil
            }
            guard let next else { return }
            process(next)
        }
    }

    // MARK: Processing

    private func process(_ item: QueueItem) {
        switch item {
        case .work(let work, let completion):
            let outcome = applyWork(work)
            completion?.resume(returning: outcome == .applied)
        case .updateRoot(let boxed):
            guard !stopped, let workflow = boxed as? Root else { return }
            setPhase(.applying)
            root.update(workflow: workflow)
            renderAndRelease()
        case .observe(let id, let callback):
            guard !stopped else { return }
            callbacks[id] = callback
            callback(publisher.current as Any)
        case .unobserve(let id):
            callbacks[id] = nil
        case .stop(let completion):
            if !stopped {
                stopped = true
                root.tearDown()
                context.effects.release(queue: self, observers: context.observers)
                callbacks.removeAll()
                publisher.finish()
                outputContinuation.finish()
            }
            completion?.resume()
        }
    }

    private func applyWork(_ work: any QueuedWork) -> WorkOutcome {
        guard !stopped else {
            context.discarded(work.description, node: nil, reason: .hostStopped, origin: work.origin)
            return .discarded(.hostStopped)
        }
        guard let node = context.nodes[work.nodeID] else {
            context.discarded(work.description, node: nil, reason: .nodeEnded, origin: work.origin)
            return .discarded(.nodeEnded)
        }
        setPhase(.applying)
        let outcome = work.apply(to: node)
        if case .discarded(let reason) = outcome {
            setPhase(.idle)
            context.discarded(work.description, node: node.info, reason: reason, origin: work.origin)
            return outcome
        }
        renderAndRelease()
        return outcome
    }

    /// One render pass from the root, then the release of its consequences.
    private func renderAndRelease() {
        setPhase(.rendering)
        let finish = context.observers.isEmpty ? [] : context.observers.compactMap { $0.renderPassWillStart() }
        let start = finish.isEmpty ? nil : ContinuousClock.now
        let rendering = root.render()
        if let start {
            let duration = ContinuousClock.now - start
            for completion in finish { completion(duration) }
        }
        setPhase(.releasing)
        context.effects.release(queue: self, observers: context.observers)
        publisher.publish(rendering)
        for callback in callbacks.values { callback(rendering) }
        if !pendingOutputs.isEmpty {
            for output in pendingOutputs { outputContinuation.yield(output) }
            pendingOutputs.removeAll(keepingCapacity: true)
        }
        setPhase(.idle)
    }

    @inline(__always)
    private func setPhase(_ newPhase: Phase) {
        phase.store(newPhase.rawValue, ordering: .relaxed)
    }

    private func describe(_ item: QueueItem) -> String {
        switch item {
        case .work(let work, _): return "An action (\(work.description))"
        case .updateRoot: return "A props update"
        default: return "A request"
        }
    }
}

/// An id for the calling OS thread.
@inline(__always)
func currentThread() -> UInt {
    #if canImport(Glibc)
    return UInt(pthread_self())
    #else
    return UInt(bitPattern: pthread_self())
    #endif
}

/// The latest rendering, and the async streams that follow it.
final class RenderingPublisher<Rendering: Sendable>: Sendable {
    private struct State {
        var current: Rendering?
        var streams: [UInt64: AsyncStream<Rendering>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    private let state = Mutex(State())

    /// The latest rendering (set by the first render pass, before anyone can ask).
    var current: Rendering { state.withLock { $0.current! } }

    func publish(_ rendering: Rendering) {
        // Yields happen under the lock so that each stream sees renderings in publication order,
        // and a new stream's first element is exactly the rendering current when it subscribed.
        state.withLock { state in
            state.current = rendering
            for continuation in state.streams.values { continuation.yield(rendering) }
        }
    }

    /// A stream that yields the current rendering at once, then one per render pass.
    func stream() -> AsyncStream<Rendering> {
        let (stream, continuation) = AsyncStream.makeStream(of: Rendering.self)
        let id = state.withLock { state -> UInt64? in
            if let current = state.current { continuation.yield(current) }
            if state.finished { return nil }
            state.nextID += 1
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func finish() {
        let streams = state.withLock { state in
            state.finished = true
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for continuation in streams { continuation.finish() }
    }

    /// Drops the last rendering (it may hold sinks that reference the runtime).
    func clear() {
        state.withLock { $0.current = nil }
    }
}
