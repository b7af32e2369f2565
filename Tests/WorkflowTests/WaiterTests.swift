@testable import Workflow
import Testing

/// The box an awaiting client's continuation travels in through the host's queue: resumed once,
/// with what the runtime says, or with its "abandoned" value when dropped unresumed.
@Suite("Waiters: an awaiting client is resumed exactly once")
struct WaiterTests {
    @Test("a waiter resumed with a value returns it to its client, and dropping it afterwards resumes nothing more")
    func resumedOnce() async {
        let result = await Waiter<SendError?>.wait { waiter in waiter.resume(returning: SendError(reason: .nodeEnded)) }
        #expect(result?.reason == .nodeEnded)
        let none = await Waiter<SendError?>.wait { waiter in waiter.resume(returning: nil) }
        #expect(none == nil)
    }

    @Test("a waiter dropped without being resumed resumes its client: a send as not applied (the host stopped), a flush or a stop as done")
    func droppedResumes() async {
        let send = await Waiter<SendError?>.wait { _ in }
        #expect(send?.reason == .hostStopped)
        let done = await Waiter<Done>.wait { _ in }
        _ = done
        // Dropped on another thread, as a runtime's last reference may be.
        let later = await Waiter<SendError?>.wait { waiter in Task.detached { _ = waiter } }
        #expect(later?.reason == .hostStopped)
    }
}
