import Glibc
import VoipdSystem

/// How an app is stopped and continued. The daemon knows nothing else about it, so that a
/// cgroup freezer can take the place of signals.
protocol Suspender {
    /// For logs and status ("SIGSTOP").
    var name: String { get }
    /// Stops the process; confirmation comes later (``isStopped(_:)``, or SIGCHLD).
    func suspend(_ process: AppProcess) throws
    /// Continues it. Takes effect at once: the kernel wakes a stopped task as the signal
    /// is sent.
    func resume(_ process: AppProcess) throws
    /// Whether the kernel reports the process as stopped now.
    func isStopped(_ process: AppProcess) -> Bool
}

/// SIGSTOP and SIGCONT through the pidfd. The app cannot catch or ignore either.
struct SignalSuspender: Suspender {
    var name: String { "SIGSTOP" }

    func suspend(_ process: AppProcess) throws { try process.send(SIGSTOP) }

    func resume(_ process: AppProcess) throws { try process.send(SIGCONT) }

    func isStopped(_ process: AppProcess) -> Bool {
        process.isChild ? process.pidfd.isStoppedChild() : ProcFS.state(of: process.pid) == "T"
    }
}
