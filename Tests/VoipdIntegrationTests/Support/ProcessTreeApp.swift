import Glibc
import VoipdSystem
import VoipdTestSupport

/// Tests/cgroup-apps/process_tree.c, built with gcc: a process with threads and a child
/// process with threads, every task running a little each millisecond and counting its ticks.
enum ProcessTreeProgram {
    static let gcc = "/usr/bin/gcc"
    static let source = packageDirectory + "/Tests/cgroup-apps/process_tree.c"

    /// Builds it into `directory` and returns the binary's path.
    static func build(in directory: String) throws -> String {
        let binary = directory + "/process_tree"
        let log = try openFile(directory + "/gcc.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        let status = try runToEnd([gcc, "-O1", "-Wall", "-Werror", "-pthread", "-o", binary, source], output: log.rawValue)
        guard status == .exited(0) else {
            throw TimedOut(description: "gcc \(source) failed (\(status)):\n\(ProcFS.read(directory + "/gcc.log") ?? "")")
        }
        return binary
    }
}

/// A running process_tree: the process (this test's child, in a session of its own), its
/// child process, what it said when it started, and its tasks' tick counts. Killed by
/// ``stop()`` or when dropped.
final class ProcessTreeApp {
    let process: PidFd
    /// Its /proc/self/cgroup as it read it first thing in `main`, lines joined by ';'.
    let cgroupAtStart: String
    let childPID: pid_t
    private let output: FileDescriptor
    /// The file its tasks count their ticks in, one 64-bit integer each.
    private let counters: FileDescriptor
    private let taskCount: Int

    var pid: pid_t { process.pid }

    /// Starts it with `threads` threads in each process; its counters go in a new file
    /// `countersPath`.
    init(binary: String, threads: Int, countersPath: String, cgroup: SpawnCgroup?, adjust: (inout SpawnRequest) -> Void = { _ in }) throws {
        taskCount = 2 * (threads + 1)
        counters = try openFile(countersPath, flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        if ftruncate(counters.rawValue, off_t(8 * taskCount)) != 0 { throw Errno.current("ftruncate(\(countersPath))") }
        let pipe = try makePipe()
        var request = SpawnRequest(arguments: [binary, "\(threads)", countersPath], environment: currentEnvironment(),
                                   standardOutput: pipe.second.rawValue, cgroup: cgroup)
        adjust(&request)
        let process = try spawn(request)
        let output = pipe.first
        var buffer: [UInt8] = []
        do {
            try pipe.second.close()
            let first = try Self.line(from: output, &buffer)
            let ready = try Self.line(from: output, &buffer).split(separator: " ")
            guard first.hasPrefix("cgroup "), ready.count == 3, ready[0] == "ready", let child = pid_t(ready[2]) else {
                throw TimedOut(description: "process_tree said \"\(first)\", then \(ready)")
            }
            cgroupAtStart = String(first.dropFirst(7))
            childPID = child
        } catch {
            try? process.send(SIGKILL)
            _ = try? process.waitForExit()
            throw error
        }
        self.process = process
        self.output = output
    }

    deinit { stop() }

    private var stopped = false

    /// Kills both processes (the child dies with its parent: PR_SET_PDEATHSIG) and reaps the
    /// parent. A frozen v1 task dies only when thawed: the scratch cgroup's tear-down does that.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if let child = try? PidFd(pid: childPID), ProcFS.parent(of: childPID) == pid { try? child.send(SIGKILL) }
        try? process.send(SIGKILL)
        if waitReadable(process.descriptor.rawValue, Deadline(.seconds(10))) { _ = try? process.waitForExit() }
    }

    /// How many ticks each task has counted so far: its own code's progress.
    func ticks() throws -> [UInt64] {
        var values = [UInt64](repeating: 0, count: taskCount)
        let size = 8 * taskCount
        // The file's pages are the ones the app has mapped: a read sees its latest counts.
        let descriptor = counters.rawValue
        let n = try values.withUnsafeMutableBytes { buffer in try valueOrErrno("pread(counters)") { pread(descriptor, buffer.baseAddress, size, 0) } }
        guard n == size else { throw Errno(EIO, call: "pread(counters): \(n) of \(size) bytes") }
        return values
    }

    /// Every task (thread) of both processes, as (pid, tid).
    var tasks: [(pid: pid_t, tid: pid_t)] { VoipdIntegrationTests.tasks(of: [pid, childPID]) }

    /// One line of its output, within 10 s.
    private static func line(from output: borrowing FileDescriptor, _ buffer: inout [UInt8]) throws -> String {
        let deadline = Deadline(.seconds(10))
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard waitReadable(output.rawValue, deadline) else { throw TimedOut(description: "process_tree said nothing within 10 s") }
            let bytes = try output.read(upTo: 4096)
            if bytes.isEmpty { throw TimedOut(description: "process_tree ended before saying it was ready") }
            buffer += bytes
        }
    }
}

/// A task's CPU figures from /proc/PID/task/TID/schedstat: time on a CPU (ns) and the number
/// of times it was put on one.
struct TaskCPU: Equatable, CustomStringConvertible {
    var runNanoseconds: UInt64
    var runCount: UInt64

    init?(pid: pid_t, tid: pid_t) {
        guard let text = ProcFS.read("/proc/\(pid)/task/\(tid)/schedstat") else { return nil }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt64($0) }
        guard fields.count >= 3 else { return nil }
        runNanoseconds = fields[0]
        runCount = fields[2]
    }

    var description: String { "\(runNanoseconds) ns in \(runCount) runs" }
}

/// Every task (thread) of the processes, as (pid, tid).
func tasks(of processes: [pid_t]) -> [(pid: pid_t, tid: pid_t)] {
    processes.flatMap { owner in
        directoryEntries("/proc/\(owner)/task").compactMap { pid_t($0.name) }.map { (owner, $0) }
    }
}

/// A task's state letter (/proc/PID/task/TID/stat).
func taskState(pid: pid_t, tid: pid_t) -> Character? {
    guard let text = ProcFS.read("/proc/\(pid)/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
    return text[text.index(after: close)...].split(separator: " ").first?.first
}
