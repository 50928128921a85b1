import CVoipd
import Glibc

/// Signals delivered as a readable descriptor (`signalfd(SFD_NONBLOCK | SFD_CLOEXEC)`).
/// Creating one blocks those signals for the calling thread (`pthread_sigmask`), so that
/// they are only ever seen here.
public struct SignalFd: ~Copyable {
    public let descriptor: FileDescriptor

    public init(signals: [CInt]) throws(Errno) {
        var set = sigset_t()
        voipd_sigset_empty(&set)
        for signal in signals { voipd_sigset_add(&set, signal) }
        let rc = pthread_sigmask(SIG_BLOCK, &set, nil)
        if rc != 0 { throw Errno(rc, call: "pthread_sigmask") }
        descriptor = FileDescriptor(adopting: try valueOrErrno("signalfd") { signalfd(-1, &set, CInt(SFD_NONBLOCK) | CInt(SFD_CLOEXEC)) })
    }

    /// The next pending signal's number (`read(2)` of a `signalfd_siginfo`), or
    /// ``IOResult/wouldBlock`` when none is pending.
    public func next() throws(Errno) -> IOResult<CInt> {
        var info = signalfd_siginfo()
        let result = try withUnsafeMutableBytes(of: &info) { raw throws(Errno) in try descriptor.read(into: raw) }
        guard case .processed = result else { return .wouldBlock }
        return .processed(CInt(info.ssi_signo))
    }
}

/// Takes `signal` (caught through a ``SignalFd``) with its default action after all, as a
/// program that caught it to clean up first should: its parent then sees it killed or stopped
/// by that signal (a shell stops a script at ^C, or reports a job stopped by ^Z). For a
/// signal that stops the process, returns once it is continued, with the signal blocked again
/// for the signalfd.
public func takeDefaultAction(of signal: CInt) {
    Glibc.signal(signal, SIG_DFL)
    var set = sigset_t()
    voipd_sigset_empty(&set)
    voipd_sigset_add(&set, signal)
    _ = pthread_sigmask(SIG_UNBLOCK, &set, nil)
    raise(signal)
    _ = pthread_sigmask(SIG_BLOCK, &set, nil)
}
