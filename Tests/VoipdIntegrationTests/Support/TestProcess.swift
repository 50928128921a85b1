import Glibc
import VoipdSystem
import VoipdTestSupport

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

/// The children of `pid`'s main thread (/proc/PID/task/PID/children).
func childProcesses(of pid: pid_t) -> [pid_t] {
    (ProcFS.read("/proc/\(pid)/task/\(pid)/children") ?? "").split(separator: " ").compactMap { pid_t($0) }
}
