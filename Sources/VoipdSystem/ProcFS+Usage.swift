import Glibc

/// What a process has cost so far, summed over its threads, from /proc.
public struct ProcessUsage: Sendable, Equatable {
    /// Time on a CPU (`/proc/PID/task/*/schedstat`, in nanoseconds).
    public var cpuTime: Duration
    /// Context switches: voluntary (the thread waited and was woken again) and involuntary
    /// (it was preempted) (`/proc/PID/task/*/status`).
    public var voluntarySwitches: Int
    public var involuntarySwitches: Int

    public var contextSwitches: Int { voluntarySwitches + involuntarySwitches }

    /// What was spent between an earlier reading and this one. A thread that ended in
    /// between takes its counts with it, so a figure never goes below zero.
    public func since(_ earlier: ProcessUsage) -> ProcessUsage {
        ProcessUsage(cpuTime: max(.zero, cpuTime - earlier.cpuTime),
                     voluntarySwitches: max(0, voluntarySwitches - earlier.voluntarySwitches),
                     involuntarySwitches: max(0, involuntarySwitches - earlier.involuntarySwitches))
    }
}

extension ProcFS {
    /// User and system CPU time of every thread, living or ended (fields 14 and 15 of
    /// /proc/PID/stat), in clock ticks (`sysconf(_SC_CLK_TCK)`, 100 a second on Linux).
    public static func cpuTime(of pid: pid_t) -> Duration? {
        guard let fields = statFields(pid), fields.count > 12,
              let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        let ticksPerSecond = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        return .nanoseconds(Int64((user + system) * 1_000_000_000 / ticksPerSecond))
    }

    /// When the process started, as time since the boot (field 22 of /proc/PID/stat).
    public static func startedAfterBoot(_ pid: pid_t) -> Duration? {
        guard let ticks = startTime(of: pid) else { return nil }
        let ticksPerSecond = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        return .nanoseconds(Int64(ticks * 1_000_000_000 / ticksPerSecond))
    }

    /// CPU time to the nanosecond and context switches, summed over the threads living now.
    /// Nil if the process is gone or its threads cannot be read.
    public static func usage(of pid: pid_t) -> ProcessUsage? {
        guard let directory = opendir("/proc/\(pid)/task") else { return nil }
        defer { closedir(directory) }
        var usage = ProcessUsage(cpuTime: .zero, voluntarySwitches: 0, involuntarySwitches: 0)
        var threads = 0
        while let entry = readdir(directory) {
            let name = DirectoryEntry.name(entry)
            guard let thread = Int32(name) else { continue }
            let path = "/proc/\(pid)/task/\(thread)"
            // The first field of schedstat: nanoseconds on a CPU.
            guard let schedstat = read(path + "/schedstat"), let field = schedstat.split(separator: " ").first,
                  let nanoseconds = Int64(field), let status = read(path + "/status") else { continue }
            usage.cpuTime += .nanoseconds(nanoseconds)
            for line in status.split(separator: "\n") {
                if let count = counter(line, "voluntary_ctxt_switches:") { usage.voluntarySwitches += count }
                if let count = counter(line, "nonvoluntary_ctxt_switches:") { usage.involuntarySwitches += count }
            }
            threads += 1
        }
        return threads > 0 ? usage : nil
    }

    private static func counter(_ line: Substring, _ name: String) -> Int? {
        guard line.hasPrefix(name) else { return nil }
        return Int(String(line.dropFirst(name.count).filter(\.isNumber)))
    }

    /// Time since the boot (the first field of /proc/uptime).
    public static var uptime: Duration? {
        guard let text = read("/proc/uptime"), let field = text.split(separator: " ").first, let seconds = Double(field) else {
            return nil
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }
}
