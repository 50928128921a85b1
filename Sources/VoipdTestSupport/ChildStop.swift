import CVoipd
import Glibc
import VoipdSystem

extension PidFd {
    /// Stops a child with `SIGSTOP` and waits until the kernel reports it stopped (`waitid`
    /// for a stop or an end, then taking the stop report). The wait is for the kernel's own
    /// event: SIGSTOP cannot be caught, blocked or ignored, so it comes as soon as the child
    /// leaves the kernel (at once unless it is in an uninterruptible wait such as a fault
    /// being read in). A child stopped already is left as it is. Throws `ECHILD` if the child ended instead; it is left to be reaped.
    public func stopChild() throws {
        // Stopped already: a second SIGSTOP would bring no report to wait for.
        if ProcFS.state(of: pid) == "T" { return }
        try send(SIGSTOP)
        var info = siginfo_t()
        _ = try valueOrErrno("waitid(P_PIDFD, WSTOPPED | WEXITED | WNOWAIT)") {
            voipd_waitid_pidfd(descriptor.rawValue, &info, WSTOPPED | WEXITED | WNOWAIT)
        }
        guard isStoppedChild() else { throw Errno(ECHILD, call: "pid \(pid) ended instead of stopping") }
    }
}
