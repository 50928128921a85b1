import CVoipd
import Glibc

/// How a process ended (or changed state), from `waitid`.
public enum ProcessStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(CInt)
    case killed(signal: CInt, coreDumped: Bool)
    case stopped(signal: CInt)
    case continued

    public var description: String {
        switch self {
        case .exited(let code): return "exited with status \(code)"
        case .killed(let signal, let core): return "killed by \(signalName(signal))\(core ? " (core dumped)" : "")"
        case .stopped(let signal): return "stopped by \(signalName(signal))"
        case .continued: return "continued"
        }
    }

    init?(_ info: siginfo_t) {
        var info = info
        let status = voipd_siginfo_status(&info)
        switch Int(voipd_siginfo_code(&info)) {
        case CLD_EXITED: self = .exited(status)
        case CLD_KILLED: self = .killed(signal: status, coreDumped: false)
        case CLD_DUMPED: self = .killed(signal: status, coreDumped: true)
        case CLD_STOPPED, CLD_TRAPPED: self = .stopped(signal: status)
        case CLD_CONTINUED: self = .continued
        default: return nil
        }
    }
}

/// The conventional name of a signal ("SIGKILL").
public func signalName(_ signal: CInt) -> String {
    switch signal {
    case SIGHUP: return "SIGHUP"
    case SIGINT: return "SIGINT"
    case SIGQUIT: return "SIGQUIT"
    case SIGILL: return "SIGILL"
    case SIGABRT: return "SIGABRT"
    case SIGBUS: return "SIGBUS"
    case SIGFPE: return "SIGFPE"
    case SIGKILL: return "SIGKILL"
    case SIGSEGV: return "SIGSEGV"
    case SIGPIPE: return "SIGPIPE"
    case SIGALRM: return "SIGALRM"
    case SIGTERM: return "SIGTERM"
    case SIGUSR1: return "SIGUSR1"
    case SIGUSR2: return "SIGUSR2"
    case SIGCHLD: return "SIGCHLD"
    case SIGCONT: return "SIGCONT"
    case SIGSTOP: return "SIGSTOP"
    case SIGTSTP: return "SIGTSTP"
    case SIGTRAP: return "SIGTRAP"
    default: return "signal \(signal)"
    }
}

/// A process descriptor (`pidfd_open`): signals and waits that cannot hit a recycled pid.
/// It becomes readable when the process exits.
public struct PidFd: ~Copyable {
    public let descriptor: FileDescriptor
    public let pid: pid_t

    /// `pidfd_open(pid, 0)`; pidfds are always close-on-exec.
    public init(pid: pid_t) throws(Errno) {
        descriptor = FileDescriptor(adopting: try valueOrErrno("pidfd_open(\(pid))") { voipd_pidfd_open(pid, 0) })
        self.pid = pid
    }

    /// Adopts a pidfd obtained elsewhere (`SO_PEERPIDFD`, a duplicate).
    public init(adopting descriptor: consuming FileDescriptor, pid: pid_t) {
        self.descriptor = descriptor
        self.pid = pid
    }

    /// Adopts a pidfd whose pid is not known (one a service manager kept), reading the pid
    /// from `/proc/self/fdinfo`. Nil, the descriptor closed, when it is not a pidfd or its
    /// process has been reaped.
    public init?(adoptingUnknown descriptor: consuming FileDescriptor) {
        guard let pid = Self.pid(of: descriptor) else { return nil }
        self.init(adopting: descriptor, pid: pid)
    }

    /// The `Pid:` line of a pidfd's `/proc/self/fdinfo` entry (-1 once reaped, absent for
    /// anything but a pidfd).
    private static func pid(of descriptor: borrowing FileDescriptor) -> pid_t? {
        guard let info = ProcFS.read("/proc/self/fdinfo/\(descriptor.rawValue)") else { return nil }
        for line in info.split(separator: "\n") where line.hasPrefix("Pid:") {
            guard let pid = pid_t(line.dropFirst(4).drop { $0 == " " || $0 == "\t" }), pid > 0 else { return nil }
            return pid
        }
        return nil
    }

    /// `pidfd_send_signal`.
    public func send(_ signal: CInt) throws(Errno) {
        _ = try valueOrErrno("pidfd_send_signal(\(pid), \(signalName(signal)))") {
            voipd_pidfd_send_signal(descriptor.rawValue, signal, 0)
        }
    }

    /// `pidfd_getfd`: a duplicate (close-on-exec) of the process's descriptor `target`, a
    /// number in the other process's table (EBADF there means it has closed it since).
    public func duplicateDescriptor(_ target: CInt) throws(Errno) -> FileDescriptor {
        let fd = voipd_pidfd_getfd(descriptor.rawValue, target, 0)
        guard fd >= 0 else { throw Errno.current("pidfd_getfd(\(pid), \(target))") }
        return FileDescriptor(adopting: fd)
    }

    /// Reaps the process if it has exited (`waitid(P_PIDFD, WEXITED | WNOHANG)`); only for
    /// a child. Nil while it is still running.
    public func reapIfExited() throws(Errno) -> ProcessStatus? {
        var info = siginfo_t()
        _ = try valueOrErrno("waitid(P_PIDFD)") { voipd_waitid_pidfd(descriptor.rawValue, &info, WEXITED | WNOHANG) }
        if voipd_siginfo_pid(&info) == 0 { return nil }
        return ProcessStatus(info)
    }

    /// Whether the child is stopped now (`waitid(P_PIDFD, WSTOPPED | WNOHANG)`): the kernel
    /// reports only a child stopped at this moment, so no stale report can mislead. A
    /// process that is not voipd's child (ECHILD) is not known to be stopped.
    public func isStoppedChild() -> Bool {
        var info = siginfo_t()
        guard (try? valueOrErrno("waitid(P_PIDFD)") { voipd_waitid_pidfd(descriptor.rawValue, &info, WSTOPPED | WNOHANG) }) != nil else {
            return false
        }
        return voipd_siginfo_pid(&info) != 0
    }

    /// Blocks until the child exits and reaps it (`waitid(P_PIDFD, WEXITED)`).
    public func waitForExit() throws(Errno) -> ProcessStatus {
        var info = siginfo_t()
        _ = try valueOrErrno("waitid(P_PIDFD)") { voipd_waitid_pidfd(descriptor.rawValue, &info, WEXITED) }
        return ProcessStatus(info) ?? .exited(0)
    }
}

/// Sends `signal` to every process of the group `group` (`kill(2)` with `-group`). The
/// error's text is made only on failure: a SIGCONT to a group is the first thing a wake does.
public func signalProcessGroup(_ group: pid_t, _ signal: CInt) throws(Errno) {
    _ = try valueOrErrno("kill(-\(group), \(signalName(signal)))") { kill(-group, signal) }
}
