import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A real voipd for the benchmark: its own control socket in a private directory, its log
/// in a file there, ready when its READY=1 arrives on a notify socket. It runs through
/// ``GuardedExec``, so it gets SIGTERM (and resumes its apps) if the bench dies.
final class DaemonUnderTest {
    let socketPath: String
    let logPath: String
    /// The process the bench spawned: voipd, or what `--voipd` wraps it in (a script that
    /// runs it under strace, say), which may not pass SIGTERM on to it.
    let process: PidFd
    /// voipd itself, by the MAINPID its READY=1 names; nil if it named none, or names the
    /// process spawned. Stopped first, and waited for, by its own pidfd.
    private var daemon: Watched?
    /// Where voipd reports to its "service manager" (READY=1, STATUS=). Bound only while
    /// the bench listens: nobody drains it otherwise, and a full queue would block voipd.
    private let notifyPath: String
    private var stopped = false

    /// The configuration of a voipd that stops its apps with SIGSTOP whatever the machine
    /// offers (`auto` would pick a cgroup freezer where voipd can use one): the benchmarks
    /// that do not ask for the freezer measure and check signals.
    static let signals = #"{"suspension": "signal"}"# + "\n"

    /// Spawned → READY=1 received, in nanoseconds.
    private(set) var startNanoseconds: UInt64 = 0

    /// Starts voipd with `arguments` besides the bench's own. It inherits the calling
    /// thread's CPU affinity, and so do its apps. `guarded`: through ``GuardedExec``
    /// (SIGTERM if the bench dies), which adds the bench's own start to the time; the
    /// start-up benchmark runs it directly. `memoryPressureTrigger`: voipd's default PSI
    /// trigger, off unless asked for: on a machine loaded by others it fires and voipd ends
    /// suspended bench apps as jetsam would, in the middle of a run.
    init(binary: String, directory: String, configurationText: String = DaemonUnderTest.signals, arguments: [String] = [], guarded: Bool = true,
         memoryPressureTrigger: Bool = false) throws {
        socketPath = directory + "/voipd.sock"
        logPath = directory + "/voipd.log"
        let notifyPath = directory + "/notify.sock"
        self.notifyPath = notifyPath
        let notify = try bindDatagramSocket(path: notifyPath)
        defer { unlink(notifyPath) }
        let logFile = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let environment = currentEnvironment().filter { !$0.hasPrefix("VOIPD_") && !$0.hasPrefix("NOTIFY_SOCKET=") }
            + ["NOTIFY_SOCKET=\(notifyPath)"]
        // Its own configuration, not the machine's: as root, voipd reads /etc/voipd/voipd.json
        // and /etc/voipd/apps.d when voipd is installed.
        let configuration = directory + "/voipd.json"
        try openFile(configuration, flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array(configurationText.utf8))
        let command = [binary, "--socket", socketPath, "--log-level", "warning",
                       "--config", configuration, "--apps-directory", directory + "/apps.d"]
            + (memoryPressureTrigger ? [] : ["--no-memory-pressure-trigger"]) + arguments
        let started = MonotonicInstant.now
        let pid = try spawnProcess(SpawnRequest(arguments: guarded ? GuardedExec.wrap(command) : command, environment: environment,
                                                standardOutput: logFile.rawValue, standardError: logFile.rawValue))
        process = try PidFd(pid: pid)
        let deadline = MonotonicInstant.now + .seconds(20)
        while true {
            var watched = [pollfd(fd: notify.rawValue, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: process.descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
            guard MonotonicInstant.now < deadline, poll(&watched, 2, pollTimeout(until: deadline)) >= 0 || errno == EINTR else {
                stop()
                throw BenchError("voipd did not report READY=1 within 20 s; log:\n\(log(tail: 20))")
            }
            if watched[1].revents != 0 {
                stop()
                throw BenchError("voipd exited during start-up; log:\n\(log(tail: 20))")
            }
            guard watched[0].revents != 0 else { continue }
            let message = String(decoding: try notify.read(upTo: 4096), as: UTF8.self).split(separator: "\n")
            guard message.contains("READY=1") else { continue }
            // voipd is running (it has just said so): its pid names it still.
            if let main = message.first(where: { $0.hasPrefix("MAINPID=") }).flatMap({ pid_t($0.dropFirst("MAINPID=".count)) }),
               main != process.pid {
                daemon = Watched(try PidFd(pid: main))
            }
            break
        }
        startNanoseconds = MonotonicInstant.now.nanoseconds - started.nanoseconds
    }

    deinit { stop() }

    /// voipd's pid (not a wrapper's): what the benchmarks measure.
    var pid: pid_t { daemon?.pidfd.pid ?? process.pid }

    /// The last lines of voipd's log.
    func log(tail lines: Int) -> String {
        (ProcFS.read(logPath) ?? "").split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// Context switches so far (`/proc/PID/status`): voluntary and involuntary.
    func contextSwitches() throws -> (voluntary: Int, involuntary: Int) {
        guard let status = ProcFS.read("/proc/\(pid)/status") else { throw BenchError("cannot read /proc/\(pid)/status") }
        func field(_ name: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int(String($0.dropFirst(name.count + 1).filter(\.isNumber))) }
        }
        guard let voluntary = field("voluntary_ctxt_switches"), let involuntary = field("nonvoluntary_ctxt_switches") else {
            throw BenchError("no context-switch counts in /proc/\(pid)/status")
        }
        return (voluntary, involuntary)
    }

    /// Waits for voipd to settle: it tells its service manager STATUS= one second after a
    /// transition at most, and an idle daemon is one that has done so. Returns when that
    /// update arrives (or after `milliseconds` if none comes).
    func waitForStatusUpdate(milliseconds: Int32) throws {
        let notify = try bindDatagramSocket(path: notifyPath)
        defer { unlink(notifyPath) }
        let deadline = MonotonicInstant.now + .milliseconds(milliseconds)
        while MonotonicInstant.now < deadline, try waitReadable(notify.rawValue, until: deadline) {
            if String(decoding: try notify.read(upTo: 4096), as: UTF8.self).contains("STATUS=") { return }
        }
    }

    /// SIGTERM (voipd resumes every app it stopped), then SIGKILL after 10 s; reaps it. voipd
    /// itself first, by its pid, when it runs under a wrapper (a script running it under
    /// strace): a shell sent SIGTERM dies and leaves it running, and a wrapper that passes
    /// the signal on may exit before voipd has. Then the wrapper, which ends with it.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if let daemon { end(daemon.pidfd, "voipd") }
        end(process, daemon == nil ? "voipd" : "the program voipd ran under")
        _ = try? process.waitForExit()
    }

    /// SIGTERM, then SIGKILL if it has not ended within 10 s; returns once it has ended.
    private func end(_ process: borrowing PidFd, _ name: String) {
        try? process.send(SIGTERM)
        var watched = pollfd(fd: process.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let deadline = MonotonicInstant.now + .seconds(10)
        while watched.revents == 0 {
            guard MonotonicInstant.now < deadline else {
                progress("\(name) did not stop within 10 s of SIGTERM: killing it")
                try? process.send(SIGKILL)
                _ = poll(&watched, 1, 10_000)
                break
            }
            _ = poll(&watched, 1, pollTimeout(until: deadline))
        }
    }
}

/// A pidfd kept by a class: a stored optional one.
private final class Watched {
    let pidfd: PidFd
    init(_ pidfd: consuming PidFd) { self.pidfd = pidfd }
}

/// A datagram socket bound to a path (a notify socket).
func bindDatagramSocket(path: String) throws -> FileDescriptor {
    let socket = try Socket.make(domain: AF_UNIX, type: Socket.datagramType)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw Errno(ENAMETOOLONG, call: "bind(\(path))") }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
    _ = try withUnsafePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            try valueOrErrno("bind(\(path))") { bind(socket.rawValue, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
    return socket
}
