import Foundation
import Workflow
import WorkflowSignals

extension RenderTester {
    /// Expects a wait for `signal` (`RenderContext.awaitSignal(_:key:behaviour:coalescing:action:)`)
    /// declared under `key`, and, with `payload`, a delivery of it as version `version`: the
    /// action the workflow makes of the delivery is applied. The wait needs a `SignalCenter` in
    /// the host's dependencies, as live: give the tester one with ``providing(_:as:)``.
    ///
    ///     try Order(...).renderTester(initialState: paid)
    ///         .providing(center)
    ///         .expectSignal(Order.shipmentSignal(for: "o-1"), producing: "DHL")
    ///         .render()
    ///         .assert(state: shipped)
    public func expectSignal<Payload: Encodable>(
        _ signal: SignalID, key: String = "", producing payload: Payload, version: UInt64 = 1
    ) -> Self {
        let bytes = (try? JSONEncoder().encode(payload)).map(Array.init) ?? []
        let delivery = SignalDelivery(signal: signal, version: version, payload: bytes, posted: now)
        return expectWorker(type: SignalWaitWorker.self, key: SignalWaitWorker.workerKey(signal, key: key),
                            producingOutput: SignalWaitOutput(testing: delivery)) { $0.signal == signal }
    }

    /// Expects a wait for `signal` declared under `key`, with no delivery.
    public func expectSignal(_ signal: SignalID, key: String = "") -> Self {
        expectWorker(type: SignalWaitWorker.self, key: SignalWaitWorker.workerKey(signal, key: key)) { $0.signal == signal }
    }
}
