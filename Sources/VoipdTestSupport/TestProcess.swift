import Glibc
import VoipdSystem
import VoipdVocabulary

/// A process a test or a benchmark started (in its own session), known by pidfd, stopped by
/// it at the latest when the value goes.
public final class TestProcess {
    public let pidfd: PidFd
    public private(set) var status: ProcessStatus?

    public var pid: pid_t { pidfd.pid }

    /// `extraDescriptors` (borrowed) become its 3, 4, … (a service manager's `$LISTEN_FDS`);
    /// `adjust` changes anything else of how it starts (credentials, limits, umask).
    public init(_ arguments: [String], environment: [String] = currentEnvironment(), output: CInt? = nil, extraDescriptors: [CInt] = [],
                adjust: (inout SpawnRequest) -> Void = { _ in }) throws {
        var request = SpawnRequest(arguments: arguments, environment: environment,
                                   standardOutput: output, standardError: output, extraDescriptors: extraDescriptors)
        adjust(&request)
        pidfd = try spawn(request)
    }

    /// Waits for it to exit on its own, within `timeout`.
    public func waitForExit(_ timeout: Duration) throws -> ProcessStatus {
        if let status { return status }
        let deadline = MonotonicInstant.now + timeout
        while try !waitReadable(pidfd.descriptor, timeoutMilliseconds: pollTimeout(until: deadline)) {
            guard MonotonicInstant.now < deadline else { throw TestFailure("pid \(pid) did not exit within \(timeout)") }
        }
        let result = try pidfd.waitForExit()
        status = result
        return result
    }

    /// SIGTERM, so that a program with workers or children ends them; SIGKILL to its session
    /// if it has not exited within `grace`. Reaped.
    public func terminate(grace: Duration = .seconds(5)) {
        guard status == nil else { return }
        try? pidfd.send(SIGTERM)
        if (try? waitForExit(grace)) == nil { kill(-pid, SIGKILL) }
        stop()
    }

    /// Continues it (in case it was stopped) and kills it, then reaps it.
    public func stop() {
        guard status == nil else { return }
        try? pidfd.send(SIGCONT)
        try? pidfd.send(SIGKILL)
        status = try? pidfd.waitForExit()
    }

    deinit { stop() }
}
