import Glibc
import VoipdSystem
import VoipdTestSupport

/// A process a test started (in its own session), stopped by pid when the test ends.
final class TestProcess {
    let pidfd: PidFd
    private(set) var status: ProcessStatus?

    var pid: pid_t { pidfd.pid }

    /// `extraDescriptors` (borrowed) become its 3, 4, … (a service manager's `$LISTEN_FDS`);
    /// `adjust` changes anything else of how it starts (credentials, limits, umask).
    init(_ arguments: [String], environment: [String] = currentEnvironment(), output: CInt? = nil, extraDescriptors: [CInt] = [],
         adjust: (inout SpawnRequest) -> Void = { _ in }) throws {
        var request = SpawnRequest(arguments: arguments, environment: environment,
                                   standardOutput: output, standardError: output, extraDescriptors: extraDescriptors)
        adjust(&request)
        pidfd = try spawn(request)
    }

    /// Waits for it to exit on its own, within the deadline.
    func waitForExit(_ timeout: Duration) throws -> ProcessStatus {
        if let status { return status }
        guard waitReadable(pidfd.descriptor.rawValue, Deadline(timeout)) else { throw TimedOut(description: "pid \(pid) did not exit") }
        let result = try pidfd.waitForExit()
        status = result
        return result
    }

    /// Continues it (in case it was stopped) and kills it, then reaps it.
    func stop() {
        guard status == nil else { return }
        try? pidfd.send(SIGCONT)
        try? pidfd.send(SIGKILL)
        status = try? pidfd.waitForExit()
    }

    deinit { stop() }
}

/// Runs a command to completion and returns its exit code and output.
func runCommand(_ arguments: [String], environment: [String] = currentEnvironment(), timeout: Duration = .seconds(30)) throws -> (status: Int32, output: String) {
    let directory = try makeTemporaryDirectory("voipd-cmd")
    defer { removeTree(directory) }
    let path = directory + "/output"
    let output = try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC)
    let process = try TestProcess(arguments, environment: environment, output: output.rawValue)
    defer { process.stop() }
    let status = try process.waitForExit(timeout)
    let text = ProcFS.read(path) ?? ""
    switch status {
    case .exited(let code): return (code, text)
    default: return (-1, text)
    }
}

/// The kernel's state letter for a process ("T" when stopped).
func processState(_ pid: pid_t) -> Character? { ProcFS.state(of: pid) }

/// How many descriptors a process has open.
func openDescriptorCount(_ pid: pid_t) -> Int { ProcFS.descriptors(of: pid).count }
