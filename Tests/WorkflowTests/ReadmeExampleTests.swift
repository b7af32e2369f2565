import Foundation
import TestSupport
import Testing
import Workflow

// BEGIN README first-workflow
/// A stopwatch-style counter: its state is an Int, its rendering is what a UI (or an API) shows.
struct TapCounter: Workflow, Sendable {
    /// Props: how much each tap adds.
    var step = 1

    struct Rendering: Sendable {
        let taps: Int
        let onTap: @Sendable () -> Void
    }

    /// The only way state changes: an action, applied by the runtime.
    enum Action: WorkflowAction {
        typealias WorkflowType = TapCounter
        case tap

        func apply(toState state: inout Int, context: ApplyContext<TapCounter>) -> Never? {
            state += context.props.step
            return nil
        }
    }

    func makeInitialState() -> Int { 0 }

    func render(state: Int, context: RenderContext<TapCounter>) -> Rendering {
        let sink = context.makeSink(of: Action.self)
        return Rendering(taps: state, onTap: { sink.send(.tap) })
    }
}

func runTapCounter() -> Int {
    let host = WorkflowHost(workflow: TapCounter(step: 2))
    host.rendering.onTap()          // applied, cascaded and re-rendered before it returns
    host.rendering.onTap()
    return host.rendering.taps      // 4
}
// END README first-workflow

@Suite("README")
struct ReadmeExampleTests {
    @Test("the README's first workflow compiles and runs as described")
    func firstWorkflow() {
        #expect(runTapCounter() == 4)
    }

    @Test("the README shows exactly the example this file compiles")
    func readmeMatchesThisFile() throws {
        let (source, readme) = try ReadmeBlock.pair(named: "first-workflow", testFile: #filePath)
        #expect(source != nil && readme == source)
    }
}
