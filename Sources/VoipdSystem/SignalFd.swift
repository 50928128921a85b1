import CVoipd
import Glibc

/// Signals delivered as a readable descriptor (`signalfd(SFD_NONBLOCK | SFD_CLOEXEC)`).
/// Creating one blocks those signals for the calling thread (`pthread_sigmask`), so that
/// they are only ever seen here.
public struct SignalFd: ~Copyable {
    public let descriptor: FileDescriptor

    public init(signals: [CInt]) throws {
        var set = sigset_t()
        voipd_sigset_empty(&set)
        for signal in signals { voipd_sigset_add(&set, signal) }
        let rc = pthread_sigmask(SIG_BLOCK, &set, nil)
        if rc != 0 { throw Errno(rc, call: "pthread_sigmask") }
        let fd = try valueOrErrno("signalfd") { signalfd(-1, &set, CInt(SFD_NONBLOCK) | CInt(SFD_CLOEXEC)) }
        descriptor = FileDescriptor(adopting: fd)
    }

    /// Reads every pending signal; empty when none is pending.
    public func drain() throws -> [signalfd_siginfo] {
        var result: [signalfd_siginfo] = []
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        while true {
            let n = Glibc.read(descriptor.rawValue, &info, size)
            if n == size { result.append(info); continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno != EAGAIN { throw Errno.current("read(signalfd)") }
            return result
        }
    }
}
