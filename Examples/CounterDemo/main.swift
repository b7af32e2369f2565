// counter-demo STORE [--ticks N]: a durable counter that survives kill -9.
//
// It resumes instance "counter" from STORE (or starts it), then adds 1 every 200 ms, printing
// the count after each commit. Kill it with `kill -9` at any moment and run it again: it
// continues from the last committed count, never losing or repeating an increment.
import DurableWorkflow
import WorkflowLMDB
import Foundation
import Workflow
import WorkflowExamples

/// Prints a line at once (unbuffered), so nothing printed is lost when the process is killed.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    say("usage: counter-demo STORE [--ticks N]")
    exit(2)
}
let ticks = arguments.firstIndex(of: "--ticks").flatMap { Int(arguments[$0 + 1]) } ?? .max
let configuration = DurableConfiguration(mode: .strict, actions: Counter.actions)
do {
    let store = try WorkflowStore.open(path: arguments[1])
    let resumed = try store.instance(id: "counter") != nil
    let host = resumed
        ? try store.resume(id: "counter", as: Counter.self, configuration: configuration)
        : try store.start(Counter(), id: "counter", configuration: configuration)
    say(resumed ? "resumed: count = \(host.rendering.count)" : "started: count = 0")
    var tick = 0
    while tick < ticks {
        Thread.sleep(forTimeInterval: 0.2)
        host.rendering.increment.send(Counter.Increment())   // committed (fsync) before it returns
        say("count = \(host.rendering.count)")
        tick += 1
    }
} catch {
    FileHandle.standardError.write(Data("counter-demo: \(error)\n".utf8))
    exit(1)
}
