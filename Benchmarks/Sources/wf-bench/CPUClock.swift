import Foundation

/// CPU time used so far, in seconds (user and system, every thread): this process's, or that of
/// a PostgreSQL server on this machine. Read before and after a run, it says how much CPU each
/// acknowledged action cost, and with the run's rate how many cores were busy: whether a case was
/// bound by the machine's cores or by waiting (a flush, a round trip, a committer's turn).
struct CPUClock: Sendable {
    /// What `name` in a measurement's case says the clock counted (`process`, `server`).
    let name: String
    let read: @Sendable () -> Double

    /// This process (every thread, user and system time).
    static let process = CPUClock(name: "process") {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return total(usage.ru_utime) + total(usage.ru_stime)
    }

    private static func total(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }

    /// A PostgreSQL server on this machine, found from one of its backends (`backendPID`, from
    /// `pg_backend_pid()`): its postmaster (that backend's parent) and every process it started,
    /// with the time of those it already reaped. `nil` when `/proc` does not show the backend as a
    /// `postgres` process (a server on another machine, or in another PID namespace, where that
    /// number may be another process's).
    static func postgresServer(backendPID: Int32) -> CPUClock? {
        guard let backend = ProcessStat(pid: backendPID), backend.name == "postgres",
              let postmaster = ProcessStat(pid: backend.parent), postmaster.name == "postgres" else { return nil }
        let root = postmaster.pid
        return CPUClock(name: "server") {
            var ticks = ProcessStat(pid: root).map { $0.ownTicks + $0.reapedTicks } ?? 0
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for entry in entries {
                guard let pid = Int32(entry), pid != root, let stat = ProcessStat(pid: pid), stat.parent == root else { continue }
                ticks += stat.ownTicks + stat.reapedTicks
            }
            return Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    /// Runs `body`, which returns a rate per second, and returns it with the CPU each of `clocks`
    /// counted per unit of that rate, in µs (the units being the rate times the time `body` took).
    static func perUnit(_ clocks: [CPUClock], _ body: () throws -> Double) rethrows -> (rate: Double, microseconds: [Double]) {
        let before = clocks.map { $0.read() }
        var rate = 0.0
        let elapsed = try seconds { rate = try body() }
        let spent = zip(clocks, before).map { $0.read() - $1 }
        let units = rate * elapsed
        return (rate, spent.map { units > 0 ? $0 / units * 1e6 : 0 })
    }
}

/// The fields of `/proc/PID/stat` that ``CPUClock`` reads.
private struct ProcessStat {
    let pid: Int32
    /// The executable's name, as the kernel keeps it (at most 15 bytes).
    let name: Substring
    let parent: Int32
    /// User and system time of the process itself, and of its children it waited for (clock ticks).
    let ownTicks: Int
    let reapedTicks: Int

    init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let nameStart = text.firstIndex(of: "("), let nameEnd = text.lastIndex(of: ")"), nameStart < nameEnd else { return nil }
        // After the name (which may hold spaces, within parentheses): state, ppid, …; utime is
        // field 14 of the whole line, so the 12th after the name.
        let fields = text[text.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]),
              let user = Int(fields[11]), let system = Int(fields[12]), let childUser = Int(fields[13]), let childSystem = Int(fields[14])
        else { return nil }
        self.pid = pid
        name = text[text.index(after: nameStart)..<nameEnd]
        self.parent = parent
        ownTicks = user + system
        reapedTicks = childUser + childSystem
    }
}
