import Glibc
import VoipdSystem
import VoipdTestSupport

/// strace attached to a running process (`strace -p`), making one of its system calls fail
/// with an error the kernel could give (`-e inject=CALL:error=ERRNO`): for the errors a
/// test cannot otherwise cause on demand (a timer the kernel will not arm, a signal it will
/// not deliver). Only the process's main thread is traced (voipd's loop runs there). Ends
/// (strace stopped by its pid, which detaches it) by ``detach()`` or when the value goes.
final class SyscallFaults {
    static let strace = "/usr/bin/strace"
    /// Whether a test may use it (under CI it must: `.ci/run` installs strace).
    static var available: Bool { toolAvailableOrCI(strace) }

    private let tracer: TestProcess

    /// Attaches to `pid` and returns once strace says it is attached: from then on, `call`
    /// fails with `error` (an errno name, `ENOMEM`); `when` limits it to some of the calls,
    /// in strace's syntax (`1`: the first one after attaching; `2+`: all but the first).
    /// strace's output goes to a file in `directory`.
    init(pid: pid_t, failing call: String, with error: String, when: String? = nil, in directory: String) throws {
        let output = directory + "/strace-\(pid)-\(call).log"
        let file = try openFile(output, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let injection = "inject=\(call):error=\(error)" + (when.map { ":when=\($0)" } ?? "")
        tracer = try TestProcess([Self.strace, "-p", "\(pid)", "-e", "trace=\(call)", "-e", injection], output: file.rawValue)
        do {
            try waitForText("Process \(pid) attached", in: output)
        } catch {
            tracer.stop()
            throw error
        }
    }

    /// Detaches strace: the process runs on untraced, its calls no longer failed.
    func detach() { tracer.terminate() }

    deinit { detach() }
}
