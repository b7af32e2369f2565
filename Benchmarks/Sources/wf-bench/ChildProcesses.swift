import Foundation

/// Child processes of this executable that measure together: each prepares (its store, its
/// instances), says "ready", waits for "go" on its input, runs its window and prints the rate it
/// reached. Starting them all before any measures keeps their set-up out of one another's window.
enum ChildProcesses {
    struct ChildFailed: Error, CustomStringConvertible {
        let arguments: [String]
        var description: String { "wf-bench child \(arguments.joined(separator: " ")) did not report" }
    }

    /// Runs one child per argument list (each starting with the child's mode flag) and returns the
    /// sum of the rates they print.
    static func runTogether(_ argumentLists: [[String]]) throws -> Double {
        let children = try argumentLists.map { arguments -> (Process, Pipe, Pipe, [String]) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = arguments
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            return (process, input, output, arguments)
        }
        defer {
            for (process, _, _, _) in children where process.isRunning { process.terminate() }
        }
        for (_, _, output, arguments) in children {
            guard line(from: output.fileHandleForReading) == "ready" else { throw ChildFailed(arguments: arguments) }
        }
        for (_, input, _, _) in children { input.fileHandleForWriting.write(Data("go\n".utf8)) }
        var sum = 0.0
        for (process, _, output, arguments) in children {
            guard let text = line(from: output.fileHandleForReading), let rate = Double(text) else { throw ChildFailed(arguments: arguments) }
            sum += rate
            process.waitUntilExit()
        }
        return sum
    }

    /// The child's side: says "ready", waits for "go", prints what `measure` returns.
    static func serve(_ measure: () throws -> Double) rethrows {
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        _ = Swift.readLine()
        let rate = try measure()
        FileHandle.standardOutput.write(Data("\(rate)\n".utf8))
    }

    /// One line from `handle`, read a byte at a time (the child writes more lines later).
    static func line(from handle: FileHandle) -> String? {
        var bytes: [UInt8] = []
        while true {
            let byte = handle.readData(ofLength: 1)
            guard let first = byte.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if first == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(first)
        }
    }
}
