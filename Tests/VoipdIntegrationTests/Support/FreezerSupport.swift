import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// Waits until the cgroup reports every task frozen, the way voipd's loop will confirm a
/// freeze (``FreezeConfirmation``): a read at once, then re-reads on its schedule, with the
/// v2 notification (`POLLPRI`) ending each wait early. Returns the reads it took.
@discardableResult
func waitUntilFrozen(_ cgroup: borrowing AppCgroup, timeout: Duration = .seconds(10)) throws -> Int {
    var schedule = FreezeConfirmation(version: cgroup.version)
    let deadline = Deadline(timeout)
    var reads = 1
    while try !cgroup.isFrozen() {
        guard !deadline.hasPassed else { throw TimedOut(description: "\(cgroup.path) not frozen within \(timeout)") }
        let delay: CInt = schedule.nextDelay().map { pollTimeout(until: MonotonicInstant.now + $0) } ?? deadline.remainingMilliseconds
        if cgroup.notifiesChanges {
            var poller = pollfd(fd: cgroup.stateFile.rawValue, events: Int16(POLLPRI), revents: 0)
            _ = poll(&poller, 1, min(delay, deadline.remainingMilliseconds))
        } else {
            _ = poll(nil, 0, min(delay, deadline.remainingMilliseconds))
        }
        reads += 1
    }
    return reads
}

/// Waits until no process is left in the cgroup: under v2 woken by its notification, under
/// v1 looking again every millisecond.
func waitUntilEmpty(_ cgroup: borrowing AppCgroup, timeout: Duration = .seconds(10)) throws {
    let deadline = Deadline(timeout)
    while try cgroup.isPopulated() {
        guard !deadline.hasPassed else { throw TimedOut(description: "\(cgroup.path) still has processes after \(timeout): \((try? cgroup.processes()) ?? [])") }
        if cgroup.notifiesChanges {
            var poller = pollfd(fd: cgroup.stateFile.rawValue, events: Int16(POLLPRI), revents: 0)
            _ = poll(&poller, 1, min(100, deadline.remainingMilliseconds))
        } else {
            _ = poll(nil, 0, 1)
        }
    }
}

/// Waits until `condition` holds, looking again every millisecond, or throws at the
/// deadline. For what nothing notifies (another process's /proc state, CPU counters).
func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () throws -> Bool) throws {
    let deadline = Deadline(timeout)
    while try !condition() {
        guard !deadline.hasPassed else { throw TimedOut(description: "timed out waiting until \(what)") }
        _ = poll(nil, 0, 1)
    }
}

/// Lets `duration` pass: the interval over which a test observes that nothing happens (a
/// frozen task consuming no CPU), not a wait for something.
func observe(for duration: Duration) {
    let deadline = Deadline(duration)
    while !deadline.hasPassed { _ = poll(nil, 0, deadline.remainingMilliseconds) }
}

/// The entries of a directory, without "." and "..".
func directoryEntries(_ path: String) -> [(name: String, isDirectory: Bool)] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var result: [(String, Bool)] = []
    while let entry = readdir(directory) {
        let name = DirectoryEntry.name(entry)
        if name != "." && name != ".." { result.append((name, entry.pointee.d_type == UInt8(DT_DIR))) }
    }
    return result
}

/// Runs a program to its end within `timeout` (killed after it), its output and errors to
/// `output` (nil: the test's own), and returns how it ended.
func runToEnd(_ arguments: [String], output: CInt? = nil, timeout: Duration = .seconds(60),
              adjust: (inout SpawnRequest) -> Void = { _ in }) throws -> ProcessStatus {
    let process = try TestProcess(arguments, output: output, adjust: adjust)
    defer { process.stop() }
    return try process.waitForExit(timeout)
}

/// The CPU time every thread of a cgroup v2 cgroup has had, in nanoseconds: the sum of the
/// first field of each thread's /proc schedstat, over `cgroup.threads` (every thread of every
/// process in it). A frozen cgroup's stays the same: none of its tasks runs.
func cpuNanoseconds(ofCgroup cgroup: String) -> UInt64 {
    let threads = (ProcFS.read(cgroup + "/cgroup.threads") ?? "").split(separator: "\n")
    return threads.reduce(0) { total, tid in
        total + (ProcFS.read("/proc/\(tid)/schedstat")?.split(separator: " ").first.flatMap { UInt64($0) } ?? 0)
    }
}

/// The CPU time every thread of a process has had, in nanoseconds (the first field of each
/// /proc/PID/task/TID/schedstat). A stopped process's stays the same: none of its threads runs.
func cpuNanoseconds(ofProcess pid: pid_t) -> UInt64 {
    directoryEntries("/proc/\(pid)/task").reduce(0) { total, task in
        total + (ProcFS.read("/proc/\(pid)/task/\(task.name)/schedstat")?.split(separator: " ").first.flatMap { UInt64($0) } ?? 0)
    }
}
