@testable import Workflow
import Testing

/// The box an awaiting client's continuation travels in through the host's queue: resumed once,
/// with what the runtime says, or with its "abandoned" value when dropped unresumed.
@Suite("Waiters: an awaiting client is resumed exactly once")
struct WaiterTests {
    @Test("a waiter resumed with a value returns it to its client, and dropping it afterwards resumes nothing more")
    func resumedOnce() async {
        let result: SendError? = await withUnsafeContinuation { continuation in
            let waiter = Waiter<SendError?>(continuation)
            waiter.resume(returning: SendError(reason: .nodeEnded))
        }
        #expect(result?.reason == .nodeEnded)
        let none: SendError? = await withUnsafeContinuation { continuation in Waiter<SendError?>(continuation).resume(returning: nil) }
        #expect(none == nil)
    }

    @Test("a waiter dropped without being resumed resumes its client: a send as not applied (the host stopped), a flush or a stop as done")
    func droppedResumes() async {
        let send: SendError? = await withUnsafeContinuation { continuation in _ = Waiter<SendError?>(continuation) }
        #expect(send?.reason == .hostStopped)
        let done: Done = await withUnsafeContinuation { continuation in _ = Waiter<Done>(continuation) }
        _ = done
        // Dropped on another thread, as a runtime's last reference may be.
        let later: SendError? = await withUnsafeContinuation { continuation in
            let waiter = Waiter<SendError?>(continuation)
            Task.detached { _ = waiter }
        }
        #expect(later?.reason == .hostStopped)
    }
}
