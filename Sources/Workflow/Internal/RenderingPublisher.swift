import Synchronization
import WorkflowLocks
import WorkflowMemory

/// The latest rendering, and the async streams that follow it.
///
/// Publishing is on every action's path, so it avoids the Swift runtime's metadata lookups that
/// `Optional<Rendering>` or a generic locked struct would cost: the rendering lives in a slot
/// reached through a pointer, and the stream table is touched only when streams exist.
// @unchecked Sendable: `slot`, `hasCurrent`, `streams`, `nextID` and `finished` are read and
// written only while `lock` is held (the lock's value counts the open streams), and `deinit` runs
// when no other reference, and so no other thread, remains.
final class RenderingPublisher<Rendering: Sendable>: @unchecked Sendable {
    private let lock = Lock<Int>(0)
    private let slot = ValueSlot<Rendering>()
    private var hasCurrent = false
    private var streams: [UInt64: AsyncStream<Rendering>.Continuation] = [:]
    private var nextID: UInt64 = 0
    private var finished = false

    deinit {
        if hasCurrent { slot.deinitialize() }
    }

    /// The latest rendering (set by the first release, before anyone can ask).
    var current: Rendering {
        lock.withLock { _ in
            precondition(hasCurrent, "the host's rendering was read after it was cleared")
            return slot.value
        }
    }

    /// Makes the rendering at `source` the current one, moving it into the slot (`source` is left
    /// uninitialised), and yields it to every stream. Moving spares the unspecialised runtime a
    /// copy and a destroy through value witnesses for every rendering.
    func publish(movingFrom source: UnsafeMutablePointer<Rendering>) {
        // Yields happen under the lock so that each stream sees renderings in publication order,
        // and a new stream's first element is exactly the rendering current when it subscribed.
        lock.withLock { streamCount in
            if streamCount > 0 { yieldToStreams(source.pointee) }
            slot.take(from: source, replacing: hasCurrent)
            hasCurrent = true
        }
    }

    /// Publishes the `count` renderings starting at `first`, oldest first, moving them out (as
    /// many ``publish(movingFrom:)`` calls would). With no stream open, only the last becomes
    /// current and the others are destroyed unseen: decided under the lock, so a stream opened
    /// meanwhile starts from the last one, as it would after the one-by-one publications.
    func publish(movingAll first: UnsafeMutablePointer<Rendering>, count: Int) {
        guard count > 0 else { return }
        lock.withLock { streamCount in
            if streamCount > 0 {
                for index in 0..<count { yieldToStreams(first[index]) }
            }
            slot.take(from: first + (count - 1), replacing: hasCurrent)
            hasCurrent = true
        }
        // The earlier ones, yielded or not, are done with (destroyed outside the lock: a rendering's
        // last reference may go with them).
        first.deinitialize(count: count - 1)
    }

    /// Kept out of line: the compiler computes the metadata a function body needs on entry, so
    /// inlined here the stream types would cost lookups on every publish, streams or not.
    @inline(never)
    private func yieldToStreams(_ rendering: Rendering) {
        for continuation in streams.values { continuation.yield(rendering) }
    }

    /// A stream that yields the current rendering at once, then one per render pass.
    func stream() -> AsyncStream<Rendering> {
        let (stream, continuation) = AsyncStream.makeStream(of: Rendering.self)
        let id = lock.withLock { streamCount -> UInt64? in
            if hasCurrent { continuation.yield(slot.value) }
            if finished { return nil }
            nextID += 1
            streams[nextID] = continuation
            streamCount += 1
            return nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.lock.withLock { streamCount in
                if self?.streams.removeValue(forKey: id) != nil { streamCount -= 1 }
            }
        }
        return stream
    }

    func finish() {
        let ended = lock.withLock { streamCount in
            finished = true
            streamCount = 0
            defer { streams.removeAll() }
            return Array(streams.values)
        }
        for continuation in ended { continuation.finish() }
    }

    /// Drops the last rendering (it may hold sinks that reference the runtime).
    func clear() {
        lock.withLock { _ in
            if hasCurrent { slot.deinitialize() }
            hasCurrent = false
        }
    }
}
