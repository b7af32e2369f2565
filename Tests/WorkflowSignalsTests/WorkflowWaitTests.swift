import DurableWorkflow
import Foundation
import TestSupport
import TestWorkflows
import Testing
import Workflow
import WorkflowLMDB
import WorkflowSignals

@Suite("Durable workflows waiting on signals (S7)")
struct WorkflowWaitTests {
    @Test("a signal posted while the waiting workflow was stopped is delivered after resume, once, as a logged .signal action")
    func deliveredAfterWaiterRestart() async throws {
        let dir = TemporaryDirectory("wait-restart")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "service")
        let signal = SignalID()
        let configuration = AwaitUpload.configuration(center: center)
        do {
            let host = try center.store.start(AwaitUpload(signal: signal), id: "w", configuration: configuration)
            #expect(eventually { (try? center.consumers().count) == 1 })
            await host.stopAndWait()
        }
        try center.post(signal, value: "report.pdf")
        let host = try center.store.resume(id: "w", as: AwaitUpload.self, configuration: configuration)
        #expect(eventually { host.rendering.uploaded == "report.pdf" })
        #expect(eventually { (try? center.consumers().isEmpty) == true })
        await host.stopAndWait()
        let origins = try center.store.entries(of: "w").map(\.origin)
        #expect(origins == [.props, .signal])
        // Resuming again replays the delivery; nothing is delivered twice.
        let again = try center.store.resume(id: "w", as: AwaitUpload.self, configuration: configuration)
        usleep(50_000)
        #expect(again.rendering == AwaitUpload.State(uploaded: "report.pdf", deliveries: 1))
        #expect(try center.store.entries(of: "w").count == 2)
    }

    @Test("a waiter process killed with SIGKILL and restarted receives a signal posted meanwhile by another process, exactly once")
    func waiterKilledPosterInAnotherProcess() throws {
        let dir = TemporaryDirectory("wait-kill")
        let signal = SignalID()
        let waiter = try ChildProcess(["signal-wait-workflow", dir.path, signal.description], mergeStandardError: true)
        #expect(waiter.readLine() == "waiting 0")
        usleep(100_000)
        waiter.kill()
        try waiter.waitForExit()
        let poster = try ChildProcess(["signal-post", dir.path, signal.description, "1", "0"], mergeStandardError: true)
        #expect(poster.readLine() == "posted 1")
        try poster.waitForExit()
        let restarted = try ChildProcess(["signal-wait-workflow", dir.path, signal.description], mergeStandardError: true)
        #expect(restarted.readLine() == "waiting 0")
        // JSON of the Int 1 decoded as a String fails: the workflow maps it to "<undecodable>".
        #expect(restarted.readLine(timeout: .seconds(10)) == "received <undecodable> 1")
        try restarted.waitForExit()
        let store = try WorkflowStore.open(path: dir.path)
        #expect(try store.entries(of: "waiter").map(\.origin) == [.props, .signal])
    }

    @Test("a workflow running while another process posts receives the signal promptly, once")
    func posterInAnotherProcessWhileRunning() throws {
        let dir = TemporaryDirectory("wait-live")
        let center = try SignalCenter.open(path: dir.path, processIdentity: "service")
        let signal = SignalID()
        let host = try center.store.start(AwaitUpload(signal: signal), id: "w", configuration: AwaitUpload.configuration(center: center, mode: .grouped))
        #expect(eventually { (try? center.consumers().count) == 1 })
        let poster = try ChildProcess(["signal-post", dir.path, signal.description, "1", "0"], mergeStandardError: true)
        #expect(poster.readLine() == "posted 1")
        try poster.waitForExit()
        #expect(eventually(timeout: .seconds(5)) { host.rendering.deliveries == 1 })
        usleep(50_000)
        #expect(host.rendering.deliveries == 1)
        #expect(try center.store.entries(of: "w").map(\.origin) == [.props, .signal])
    }

    @Test("awaitSignal without a SignalCenter in the host is a programmer error naming the workflow")
    func missingCenter() throws {
        let dir = TemporaryDirectory("wait-nocenter")
        let store = try WorkflowStore.open(path: dir.path)
        let errors = Received()
        var configuration = DurableConfiguration(actions: ActionRegistry(AwaitUpload.Received.self))
        let messages = MessageLog()
        configuration.host.programmerErrors = .report { messages.append($0) }
        _ = try store.start(AwaitUpload(signal: SignalID()), id: "w", configuration: configuration)
        #expect(messages.all.first?.contains("AwaitUpload awaits a signal, but its host has no SignalCenter") == true)
        #expect(errors.all.isEmpty)
    }
}

/// A thread-safe list of messages.
final class MessageLog: @unchecked Sendable {
    // @unchecked Sendable: every access goes through `lock`.
    private let lock = NSLock()
    private var messages: [String] = []
    func append(_ message: String) { lock.withLock { messages.append(message) } }
    var all: [String] { lock.withLock { messages } }
}
