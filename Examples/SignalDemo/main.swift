// signal-demo: two processes exchanging signals through one store.
//
//   signal-demo consume STORE SIGNAL   waits for versions of SIGNAL and prints each, once, until
//                                      one terminates consumers (survives restarts: the consumer
//                                      is durable and its position is saved with each delivery)
//   signal-demo post STORE SIGNAL TEXT [--final]
//                                      posts TEXT as the next version (--final terminates consumers)
import Foundation
import WorkflowLMDB
import WorkflowSignals

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count >= 4, let signal = SignalID(arguments[3]) else {
    say("usage: signal-demo consume STORE SIGNAL | signal-demo post STORE SIGNAL TEXT [--final]")
    exit(2)
}
do {
    switch arguments[1] {
    case "consume":
        let center = try SignalCenter.open(path: arguments[2], processIdentity: "signal-demo-consumer")
        let consumer = try center.register(signal, owner: "demo", behaviour: .untilTerminated, scope: .durable,
                                           id: ConsumerID(stableName: "signal-demo \(signal)"))
        // Writes made through the handler's transaction (to an application table of the store)
        // commit with the delivery mark: exactly once. Printing is outside that transaction: a
        // kill between the print and the commit prints that version again after the restart.
        let received = try center.table(named: "signal-demo.received")
        // Said before attaching: deliveries start on another thread as soon as a handler is attached.
        say("waiting for \(signal)")
        center.attach(consumer, handler: .transactional { delivery, txn in
            say("version \(delivery.version): \(try delivery.decode(String.self))\(delivery.terminatesConsumersAfterDelivery ? " (final)" : "")")
            try txn.put(delivery.payload, forKey: Array("version \(delivery.version)".utf8), in: received)
        })
        while try center.consumers(of: signal).contains(where: { $0.id == consumer }) { usleep(5000) }
        say("done: the consumer was removed after the final version; \(try center.entries(in: received).count) versions recorded")
    case "post":
        let center = try SignalCenter.open(path: arguments[2], processIdentity: "signal-demo-poster-\(getpid())")
        let final = arguments.contains("--final")
        let version = try center.post(signal, value: arguments[4], terminatesConsumersAfterDelivery: final)
        say("posted version \(version)")
        try center.stop()
    default:
        say("unknown command \(arguments[1])")
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("signal-demo: \(error)\n".utf8))
    exit(1)
}
