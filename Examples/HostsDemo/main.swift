// Several hosts on one PostgreSQL store: `tools/hosts-demo` runs the whole story; README's
// "Several hosts" section gives the commands one by one.
//   hosts-demo create URL N          N counting instances, held by no host
//   hosts-demo host URL MACHINE      a host: takes over what the store assigns it, counts
//   hosts-demo list URL              every instance, its count and the host that holds it
import DurableWorkflow
import Foundation
import Workflow
import WorkflowExamples
#if Postgres
import WorkflowPostgres
#endif

/// Writes one line to stdout at once (the demo's processes share a terminal).
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hosts-demo: \(message)\n".utf8))
    exit(2)
}

#if Postgres
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, var configuration = PostgresConfiguration(url: arguments[1]) else {
    fail("usage: hosts-demo create URL N | host URL MACHINE | list URL   (URL: postgres://user@host:port/db?schema=name)")
}
// A short lease, so that the demo's takeover comes within seconds.
configuration.leaseTime = .seconds(2)
let counters = DurableConfiguration(mode: .grouped(maxBatch: 64, maxDelay: .milliseconds(5)), actions: Counter.actions)

do {
    switch arguments[0] {
    case "create" where arguments.count == 3:
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        for index in 1...(Int(arguments[2]) ?? 4) {
            let host = try store.start(Counter(), id: "order-\(index)", configuration: counters)
            await host.stopAndWait()
        }
        storage.close()
        say("created \(arguments[2]) instances, held by no host")

    case "host" where arguments.count == 3:
        configuration.machine = arguments[2]
        let storage = try PostgresStorage.open(configuration)
        let store = WorkflowStore(backend: storage)
        let name = arguments[2]
        say("\(name): host started (pid \(getpid())), lease \(configuration.leaseTime)")
        var running: [String: WorkflowHost<Counter>] = [:]
        var lastReport = ContinuousClock.now
        while true {
            for id in try storage.instancesToTakeOver() where running[id] == nil {
                do {
                    let host = try store.resume(id: id, as: Counter.self, configuration: counters)
                    running[id] = host
                    say("\(name): took over \(id) at count \(host.rendering.count)")
                } catch let error as DurableError where error.kind == .instanceInUse {
                    say("\(name): \(id) is held by another host")
                } catch {
                    say("\(name): could not take \(id): \(error)")
                }
            }
            for (id, host) in running {
                if let failure = host.failure {
                    say("\(name): lost \(id): \(failure)")
                    host.stop()
                    running[id] = nil
                } else {
                    host.rendering.increment.send(Counter.Increment())
                }
            }
            if ContinuousClock.now - lastReport > .seconds(1) {
                lastReport = .now
                let counts = running.keys.sorted().map { "\($0)=\(running[$0]!.rendering.count)" }
                say("\(name): runs \(counts.isEmpty ? "nothing" : counts.joined(separator: " "))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }

    case "list":
        configuration.readOnly = true
        for instance in try PostgresStorage.open(configuration).instances() {
            let holder = instance.claim.isNone ? "nobody" : "pid \(instance.claim.pid)"
            say("\(instance.id)  \(instance.lastSequence - 1) increments  held by \(holder)")
        }

    default:
        fail("usage: hosts-demo create URL N | host URL MACHINE | list URL")
    }
} catch {
    fail("\(error)")
}
#else
fail("built without the Postgres trait: swift build --traits Postgres --product hosts-demo")
#endif
