import Foundation
import TestSupport
import Testing
import Workflow
import WorkflowFeedback

// BEGIN README feedback-loop
/// A download that retries: the same machine as a feedback loop...
enum Download {
    enum State: Sendable, Equatable { case idle, loading(attempt: Int), done(String), failed }
    enum Event: Sendable { case start, loaded(String), error }

    static func reduce(_ state: inout State, _ event: Event) {
        switch (state, event) {
        case (.idle, .start), (.failed, .start): state = .loading(attempt: 1)
        case (.loading, .loaded(let body)): state = .done(body)
        case (.loading(let attempt), .error): state = attempt < 3 ? .loading(attempt: attempt + 1) : .failed
        default: break
        }
    }

    static func loop(fetch: @escaping @Sendable (Int) async -> String?) -> FeedbackLoop<ClosureReducer<State, Event>> {
        FeedbackLoop(initial: .idle, reduce: reduce, feedbacks: [
            // Each time the state enters a new attempt, fetch; the result comes back as an event.
            .whenChanges({ state -> Int? in if case .loading(let attempt) = state { attempt } else { nil } }) { attempt in
                guard let attempt else { return nil }
                return await fetch(attempt).map(Event.loaded) ?? .error
            },
        ])
    }
}

/// ...and as a workflow: the reducer is the action, the feedback is a worker declared by render.
struct DownloadWorkflow: Workflow, Sendable {
    let fetch: @Sendable (Int) async -> String?

    struct Apply: WorkflowAction {
        typealias WorkflowType = DownloadWorkflow
        let event: Download.Event
        func apply(toState state: inout Download.State) -> Never? {
            Download.reduce(&state, event)
            return nil
        }
    }

    func makeInitialState() -> Download.State { .idle }

    func render(state: Download.State, context: RenderContext<DownloadWorkflow>) -> (Download.State, Sink<Apply>) {
        if case .loading(let attempt) = state {
            let fetch = self.fetch
            context.run(AsyncOperationWorker(identity: "\(attempt)") { await fetch(attempt) }, key: "fetch") {
                Apply(event: $0.map(Download.Event.loaded) ?? .error)
            }
        }
        return (state, context.makeSink(of: Apply.self))
    }
}
// END README feedback-loop

@Suite("README feedback example")
struct ReadmeFeedbackExampleTests {
    @Test("the loop and the workflow are the same machine: two failures, then success on the third attempt")
    func sameMachine() async {
        let fetch: @Sendable (Int) async -> String? = { attempt in attempt == 3 ? "payload" : nil }
        let loop = Download.loop(fetch: fetch)
        loop.start()
        loop.send(.start)
        #expect(await eventually { loop.state == .done("payload") })

        let host = WorkflowHost(workflow: DownloadWorkflow(fetch: fetch))
        host.rendering.1.send(DownloadWorkflow.Apply(event: .start))
        #expect(await eventually { host.rendering.0 == .done("payload") })
    }

    @Test("the README shows exactly the example this file compiles")
    func readmeMatchesThisFile() throws {
        let (source, readme) = try ReadmeBlock.pair(named: "feedback-loop", testFile: #filePath)
        #expect(source != nil && readme == source)
    }
}
