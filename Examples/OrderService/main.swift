// order-service: the order workflow (Sources/WorkflowExamples/Order.swift) run as a service.
//
//   order-service serve STORE --orders N   runs orders "order-0" ... "order-N-1" in a WorkflowService
//                                          (grouped commits): places those not yet placed, prints
//                                          "finished ID OUTCOME" as each finishes and "all finished"
//                                          once every one has, then shuts down gracefully.
//                                          Kill it with kill -9 at any moment and run it again.
//   order-service ship STORE --orders N    the warehouse, another process: posts the shipment
//                                          signal of every order (each order waits for its own).
import DurableWorkflow
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Workflow
import WorkflowExamples
import WorkflowLMDB
import WorkflowService
import WorkflowSignals

/// Prints a line at once (unbuffered), so nothing printed is lost when the process is killed.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 5, ["serve", "ship"].contains(arguments[1]), arguments[3] == "--orders", let count = Int(arguments[4]) else {
    say("usage: order-service serve|ship STORE --orders N")
    exit(2)
}
let path = arguments[2]

/// Order `index`: two or three line items; every 100th orders have a declined card (99) or no
/// time to pay (98).
func order(_ index: Int) -> Order {
    var items = ["book": 1 + index % 3, "pen": 2]
    if index % 2 == 0 { items["lamp"] = 1 }
    return Order(id: "order-\(index)", items: items, amount: 1_000 + index, payWithinSeconds: index % 100 == 98 ? 0 : 3600)
}

// The services keep their answers in actors: their state is the actor's, each call runs alone.

/// Stock that answers a repeated reservation (same idempotency key) with the first answer; the
/// first attempt for a lamp fails, as a busy warehouse would.
actor Warehouse: Inventory {
    private var reservations: [String: Int] = [:]
    func reserve(order: String, sku: String, quantity: Int, attempt: TaskAttempt) async throws -> Int {
        if sku == "lamp" && attempt.number == 1 { throw URLError(.timedOut) }
        let key = attempt.idempotencyKey ?? "\(order)/\(sku)"
        if let existing = reservations[key] { return existing }
        let reservation = reservations.count + 1
        reservations[key] = reservation
        return reservation
    }
}

/// Card payments that answer a repeated charge with the first receipt; every 10th order's first
/// attempt fails (retried), every 100th (99) is declined (not retried).
actor CardPayments: Payments {
    private var receipts: [String: String] = [:]
    private var refunds: Set<String> = []

    func charge(order: String, cents: Int, attempt: TaskAttempt) async throws -> String {
        let index = Int(order.dropFirst("order-".count)) ?? 0
        if index % 100 == 99 { throw CardDeclined() }
        if index % 10 == 0 && attempt.number == 1 { throw URLError(.networkConnectionLost) }
        let key = attempt.idempotencyKey ?? order
        if let existing = receipts[key] { return existing }
        let receipt = "rcpt-\(order)-\(cents)"
        receipts[key] = receipt
        return receipt
    }

    func refund(order: String, cents: Int, receipt: String, attempt: TaskAttempt) async throws {
        refunds.insert(attempt.idempotencyKey ?? receipt)
    }
}

/// How many orders finished (or failed), counted from many tasks.
final class FinishedOrders: Sendable {
    let count = Atomic(0)
}

do {
    let store = try WorkflowStore.open(path: path)
    let center = try SignalCenter.open(store: store, processIdentity: "order-service-\(getpid())")
    if arguments[1] == "ship" {
        for index in 0..<count {
            try center.post(Order.shipmentSignal(for: "order-\(index)"), value: index % 2 == 0 ? "DHL" : "UPS",
                            idempotencyKey: "shipment order-\(index)")
        }
        say("posted \(count) shipments")
        try center.stop()
        exit(0)
    }

    var logger = Logger(label: "order-service")
    logger.logLevel = .warning
    var configuration = DurableConfiguration(mode: .grouped, actions: Order.actions)
    configuration.host.provide(center)
    configuration.host.provide(OrderServices(inventory: Warehouse(), payments: CardPayments()))
    let service = WorkflowService(store: store, logger: logger)
    service.register(Order.self, configuration: configuration)
    let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger)

    let finished = FinishedOrders()
    Task.detached {
        guard (try? await service.untilRunning()) != nil else { return }
        say("running: \(service.runningInstances.count) orders resumed")
        await withTaskGroup(of: Void.self) { tasks in
            for index in 0..<count {
                tasks.addTask {
                    do {
                        let host = try await service.startOrResume(order(index), id: "order-\(index)", with: Order.Place())
                        let outcome = try await host.completion
                        say("finished order-\(index) \(outcome)")
                    } catch {
                        say("error order-\(index) \(error)")
                    }
                    finished.count.add(1, ordering: .relaxed)
                }
            }
        }
        say("all finished")
        await group.triggerGracefulShutdown()
    }
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { try await group.run() } catch { say("service failed: \(error)") }
        done.signal()
    }
    done.wait()
    try center.stop()
    say("stopped after \(finished.count.load(ordering: .relaxed)) of \(count)")
} catch {
    say("error: \(error)")
    exit(1)
}
