import Glibc
import VoipdSystem

/// A process the demo started, in a session of its own (a Ctrl-C in the terminal reaches
/// the demo, which then stops it), known by its pidfd so that a signal never reaches a
/// recycled pid.
final class ChildProcess {
    let name: String
    let pidfd: PidFd
    private(set) var status: ProcessStatus?

    var pid: pid_t { pidfd.pid }

    /// Starts `arguments` with standard output and error on `output`.
    init(name: String, arguments: [String], environment: [String], output: CInt) throws {
        self.name = name
        let pid = try spawnProcess(SpawnRequest(arguments: arguments, environment: environment, standardOutput: output, standardError: output))
        pidfd = try PidFd(pid: pid)
    }

    /// Waits for it to exit, at most `timeout`, and reaps it.
    func waitForExit(timeout: Duration) throws -> ProcessStatus {
        if let status { return status }
        var descriptor = pollfd(fd: pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + timeout
        while poll(&descriptor, 1, Int32(clamping: Int64(((deadline - .now) / .milliseconds(1)).rounded(.up)))) <= 0 {
            guard errno == EINTR, ContinuousClock.now < deadline else {
                throw DemoFailure("\(name) (pid \(pid)) did not exit within \(timeout)")
            }
        }
        let ended = try pidfd.waitForExit()
        status = ended
        return ended
    }

    /// Asks it to end (SIGTERM), then kills it if it has not within `grace`; reaps it.
    func stop(grace: Duration = .seconds(5)) {
        guard status == nil else { return }
        try? pidfd.send(SIGCONT)
        try? pidfd.send(SIGTERM)
        if (try? waitForExit(timeout: grace)) == nil {
            try? pidfd.send(SIGKILL)
            status = try? pidfd.waitForExit()
        }
    }
}

/// The demo's environment for its children, without what would tie them to another voipd.
func childEnvironment() -> [String] {
    currentEnvironment().filter { !$0.hasPrefix("VOIPD_") && !$0.hasPrefix("NOTIFY_SOCKET=") }
}

/// A process voipd started for the demo (the softphone): not the demo's child, but the demo
/// still stops it, through a pidfd taken as soon as its pid is known.
final class SupervisedProcess {
    let pidfd: PidFd

    var pid: pid_t { pidfd.pid }

    init(pid: pid_t) throws {
        pidfd = try PidFd(pid: pid)
    }

    /// Whether it still runs (a zombie does not).
    var isAlive: Bool {
        guard let state = ProcFS.state(of: pid) else { return false }
        return state != "Z" && state != "X"
    }

    /// Resumes it if it is stopped and kills it; voipd, its parent, reaps it.
    func kill() {
        try? pidfd.send(SIGCONT)
        try? pidfd.send(SIGKILL)
    }
}
