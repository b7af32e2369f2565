import DurableWorkflow
import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowExamples
import WorkflowLMDB
import WorkflowSignals

/// Runs the built `order-service` example.
private func orderService(_ arguments: [String]) throws -> ChildProcess {
    let path = ChildProcess.builtProduct("order-service")
    return try ChildProcess(arguments, executable: path, mergeStandardError: true)
}

@Suite("The order service example (Examples/OrderService)")
struct OrderServiceTests {
    @Test("300 orders in grouped mode, the service killed with SIGKILL, shipments posted by another process, then restarted: every order finishes once, with the outcome its script says")
    func killAndRestart() async throws {
        let dir = TemporaryDirectory("order-service")
        let orders = 300
        let first = try orderService(["serve", dir.path, "--orders", "\(orders)"])
        try await Task.sleep(for: .milliseconds(Int.random(in: 200...900)))
        first.kill()
        let before = first.readRemainingLines(timeout: .seconds(5))
        #expect(try first.waitForExit() == 128 + SIGKILL, "\(before.suffix(3))")

        let warehouse = try orderService(["ship", dir.path, "--orders", "\(orders)"])
        #expect(warehouse.readRemainingLines() == ["posted \(orders) shipments"])
        #expect(try warehouse.waitForExit() == 0)

        let second = try orderService(["serve", dir.path, "--orders", "\(orders)"])
        let lines = second.readRemainingLines(timeout: .seconds(120))
        #expect(try second.waitForExit() == 0, "\(lines.suffix(5))")
        #expect(lines.contains("all finished"), "\(lines.suffix(5))")
        #expect(lines.last == "stopped after \(orders) of \(orders)")
        let finished = lines.filter { $0.hasPrefix("finished order-") }.map { $0.split(separator: " ")[1] }
        #expect(finished.count == orders && Set(finished).count == orders)
        #expect(!lines.contains { $0.hasPrefix("error") }, "\(lines.filter { $0.hasPrefix("error") }.prefix(3))")

        // The store agrees: every order completed, with the outcome its script says.
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.instances(status: .completed).count == orders)
        #expect(try store.instances().count == orders)
        let center = try SignalCenter.open(store: store, processIdentity: "test")
        defer { try? center.stop() }
        var configuration = DurableConfiguration(actions: Order.actions)
        configuration.host.provide(center)
        for index in 0..<orders {
            let host = try store.resume(id: "order-\(index)", as: Order.self, configuration: configuration)
            let outcome = try await host.completion
            switch index % 100 {
            case 99:
                #expect(outcome == .cancelled(reason: "payment failed: the card was declined"), "order-\(index)")
            case 98:
                // No time to pay: the timer usually fires first, but a payment may win the race.
                if case .cancelled(let reason) = outcome { #expect(reason == "not paid in time", "order-\(index)") }
            default:
                #expect(outcome == .shipped(receipt: "rcpt-order-\(index)-\(1_000 + index)", carrier: index % 2 == 0 ? "DHL" : "UPS"),
                        "order-\(index): \(outcome)")
            }
        }
    }
}
