import DurableWorkflow
import Foundation
import TestSupport
import Testing
import WorkflowLMDB
import WorkflowLocks
import WorkflowSignals

@Suite("Run-scoped consumers of replicas that share an identity (S5)")
struct RunLivenessTests {
    @Test("a second live process with the same identity leaves the first one's run consumers alone, and the first still receives (issue 22, 4)")
    func liveReplicaKeepsItsConsumers() throws {
        let dir = TemporaryDirectory("sig-replicas")
        let signal = SignalID()
        let first = try ChildProcess(["signal-run-consumer", dir.path, signal.description, "svc"], mergeStandardError: true)
        #expect(first.readLine() == "ready")
        let second = try SignalCenter.open(path: dir.path, processIdentity: "svc")
        #expect(try second.consumers().map(\.owner) == ["replica-\(first.pid)"])
        try second.post(signal, payload: [1], terminatesConsumersAfterDelivery: false)
        #expect(first.readLine(timeout: .seconds(10)) == "got 1")
        try second.stop()
    }

    @Test("a replica killed with SIGKILL loses its run consumers to the next run of its identity, even before it is reaped")
    func killedReplicaIsCleanedUp() throws {
        let dir = TemporaryDirectory("sig-killed-replica")
        let signal = SignalID()
        let first = try ChildProcess(["signal-run-consumer", dir.path, signal.description, "svc"], mergeStandardError: true)
        #expect(first.readLine() == "ready")
        first.kill()
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessStatus.read(first.pid)?.hasExited != true, ContinuousClock.now < deadline { usleep(1000) }
        let next = try SignalCenter.open(path: dir.path, processIdentity: "svc")
        #expect(try next.consumers().isEmpty)
        try next.register(signal, owner: "next")
        let other = try SignalCenter.open(path: dir.path, processIdentity: "svc")
        #expect(try other.consumers().map(\.owner) == ["next"], "a live run of this process keeps its consumer")
        try first.waitForExit()
        try other.stop()
        try next.stop()
    }
}
