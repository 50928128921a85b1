import CVoipd
import Glibc

/// What the kernel does with a signal for the whole process.
public enum SignalDisposition {
    /// Ignores `signal` (`sigaction(SIG_IGN)`): for SIGPIPE, so that a vanished peer is an
    /// EPIPE error and never a fatal signal.
    public static func ignore(_ signal: CInt) throws(Errno) {
        _ = try valueOrErrno("sigaction(\(signalName(signal)), SIG_IGN)") { voipd_signal_ignore(signal) }
    }

    /// Whether SIGCHLD also reports children that stop or continue, not only those that end
    /// (`sigaction(SIGCHLD)` without or with `SA_NOCLDSTOP`).
    public static func reportChildStops(_ enabled: Bool) throws(Errno) {
        _ = try valueOrErrno("sigaction(SIGCHLD)") { voipd_sigchld_report_stops(enabled ? 1 : 0) }
    }
}
