import DurableWorkflow
import Foundation
import Synchronization
import Testing
import TestSupport
import TestWorkflows
import WorkflowFeedback
import WorkflowLMDB
import WorkflowLocks

/// A thread-safe list.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Lock<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var all: [Value] { storage.withLock { $0 } }
}

/// Waits (bounded) until `condition` holds.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
    return condition()
}

enum Event: Sendable, Equatable {
    case external(Int)
    case fromFeedback(Int)
    case start(Int)
    case finished(Int)
}

@Suite("Feedback loops (F1, F2)")
struct FeedbackLoopTests {
    @Test("external events and feedback events are reduced in arrival order; a feedback sees each event with the state after it")
    func orderAndPairs() async {
        let seen = Recorder<String>()
        let loop = FeedbackLoop(
            initial: [Event](),
            reduce: { state, event in state.append(event) },
            feedbacks: [
                .onEvent({ if case .external(let n) = $0 { n } else { nil } }, overlap: .firstWins) { n, _ in .fromFeedback(n * 10) },
                .observing { reduced in seen.append("\(reduced.event) after \(reduced.state.count)") },
            ])
        loop.start()
        loop.send(.external(1))
        #expect(await eventually { loop.state.count == 2 })
        loop.send(.external(2))
        #expect(await eventually { loop.state.count == 4 })
        #expect(loop.state == [.external(1), .fromFeedback(10), .external(2), .fromFeedback(20)])
        #expect(await eventually { seen.all.count == 4 })
        #expect(seen.all == ["external(1) after 1", "fromFeedback(10) after 2", "external(2) after 3", "fromFeedback(20) after 4"])
    }

    @Test("a burst of 10,000 events from 8 tasks loses none")
    func burst() async {
        let loop = FeedbackLoop(initial: 0, reduce: { (state: inout Int, event: Int) in state += event })
        loop.start()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<1250 { loop.send(1) } } }
        }
        _ = await loop.sendAndWait(0)
        #expect(loop.state == 10_000)
    }

    @Test("an external event sent before start is not lost and is reduced after start, once")
    func eventBeforeStart() async {
        let seen = Recorder<Int>()
        let loop = FeedbackLoop(initial: [Int](), reduce: { (state: inout [Int], event: Int) in state.append(event) },
                                feedbacks: [.observing { seen.append($0.event) }])
        loop.send(1)
        loop.send(2)
        #expect(loop.state == [])
        loop.start()
        #expect(loop.state == [1, 2])
        #expect(await eventually { seen.all == [1, 2] })
        loop.start()
        #expect(loop.state == [1, 2])
    }

    @Test("events sent from one thread while another starts the loop are reduced once each, in the order they were sent (issue 22, 7)")
    func sendsAroundStartKeepTheirOrder() async {
        for _ in 0..<30 {
            let loop = FeedbackLoop(initial: [Int](), reduce: { (state: inout [Int], event: Int) in state.append(event) })
            let fiftySent = DispatchSemaphore(value: 0)
            let sender = Thread {
                for event in 0..<400 {
                    loop.send(event)
                    if event == 50 { fiftySent.signal() }
                }
            }
            sender.start()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    fiftySent.wait()
                    loop.start()
                    done.resume()
                }.start()
            }
            #expect(await eventually { loop.state.count == 400 })
            #expect(loop.state == Array(0..<400))
            loop.stop()
        }
    }

    @Test("latest wins cancels the running effect; first wins ignores triggers while one runs")
    func overlap() async {
        let latestStarted = Recorder<Int>(), latestCancelled = Recorder<Int>(), firstStarted = Recorder<Int>()
        let loop = FeedbackLoop(
            initial: [Event](),
            reduce: { state, event in state.append(event) },
            feedbacks: [
                .onEvent({ if case .start(let n) = $0 { n } else { nil } }, overlap: .latestWins) { n, _ in
                    latestStarted.append(n)
                    do { try await Task.sleep(for: .milliseconds(200)) } catch {
                        latestCancelled.append(n)
                        return nil
                    }
                    return .finished(n)
                },
                .onEvent({ if case .start(let n) = $0 { n } else { nil } }, overlap: .firstWins) { n, _ in
                    firstStarted.append(n)
                    try? await Task.sleep(for: .milliseconds(200))
                    return .finished(n * 100)
                },
            ])
        loop.start()
        loop.send(.start(1))
        #expect(await eventually { latestStarted.all == [1] && firstStarted.all == [1] })
        loop.send(.start(2))
        #expect(await eventually { latestStarted.all == [1, 2] })
        #expect(await eventually { loop.state.contains(.finished(2)) && loop.state.contains(.finished(100)) })
        #expect(latestCancelled.all == [1])
        #expect(firstStarted.all == [1])
        #expect(!loop.state.contains(.finished(1)))
        #expect(!loop.state.contains(.finished(200)))
    }

    @Test("whenBecomesTrue fires on the rising edge only; whenChanges fires per distinct value")
    func stateTriggers() async {
        let edges = Recorder<Int>(), changes = Recorder<Bool>()
        let loop = FeedbackLoop(
            initial: 0,
            reduce: { (state: inout Int, event: Int) in state = event },
            feedbacks: [
                .whenBecomesTrue({ $0 >= 10 }, overlap: .latestWins) { state in edges.append(state); return nil },
                .whenChanges({ $0 % 2 == 0 }) { even in changes.append(even); return nil },
            ])
        loop.start()
        for value in [1, 3, 10, 12, 4, 11] { loop.send(value) }
        #expect(await eventually { edges.all == [10, 11] && changes.all == [false, true, false] })
    }
}

@Suite("Durable feedback loops (F3)")
struct DurableFeedbackLoopTests {
    @Test("stopAndWait returns once a grouped loop's events are committed and its instance released: another claim takes it at once")
    func stopAndWaitReleases() async throws {
        let dir = TemporaryDirectory("feedback-stop")
        let store = try WorkflowStore.open(path: dir.path)
        let configuration = DurableConfiguration(mode: .grouped(maxBatch: 1_000, maxDelay: .seconds(3600)))
        let loop = try FeedbackLoop.durable(store: store, id: "tally", reducer: Tally(), configuration: configuration)
        loop.start()
        for value in 1...20 { loop.send(.add(value)) }
        await loop.stopAndWait()
        #expect(try store.instance(id: "tally")?.lastSequence == 21, "every event was committed before it returned")
        let resumed = try FeedbackLoop.durable(store: store, id: "tally", reducer: Tally(), configuration: configuration)
        #expect(resumed.state == Tally.State(sum: 210, count: 20))
        await resumed.stopAndWait()
    }

    @Test("a durable loop killed with SIGKILL mid-stream resumes with the reduction of its acknowledged events; feedbacks never see replayed events")
    func killAndResume() throws {
        let dir = TemporaryDirectory("feedback-kill")
        var acknowledged = 0
        for round in 0..<10 {
            let child = try ChildProcess(["feedback-loop", dir.path], mergeStandardError: true)
            guard let ready = child.readLine(), ready.hasPrefix("ready ") else {
                Issue.record("round \(round): no ready line")
                return
            }
            let fields = ready.split(separator: " ").compactMap { Int($0) }
            let (count, sum) = (fields[0], fields[1])
            #expect(count >= acknowledged, "round \(round): resumed at \(count), \(acknowledged) acknowledged")
            #expect(sum == count * (count + 1) / 2)
            var sawFirst: Int?
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 30...150))
            while ContinuousClock.now < deadline, let line = child.readLine(timeout: .seconds(5)) {
                if line.hasPrefix("ack ") { acknowledged = Int(line.dropFirst(4))! }
                if line.hasPrefix("saw "), sawFirst == nil { sawFirst = Int(line.dropFirst(4)) }
            }
            // The feedback's first event is a new one, never one replayed from the log.
            if let sawFirst { #expect(sawFirst == count + 1, "round \(round): feedback saw \(sawFirst) first after resuming at \(count)") }
            child.kill()
            for line in child.readRemainingLines(timeout: .seconds(5)) where line.hasPrefix("ack ") {
                acknowledged = Int(line.dropFirst(4))!
            }
            try child.waitForExit()
        }
        #expect(acknowledged > 0)
    }
}
