import CVoipd
import Glibc
import VoipdVocabulary

/// A timer on the monotonic clock delivered as a readable descriptor
/// (`timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)`).
public struct TimerFd: ~Copyable {
    public let descriptor: FileDescriptor

    public init() throws(Errno) {
        descriptor = FileDescriptor(adopting: try valueOrErrno("timerfd_create") {
            timerfd_create(CLOCK_MONOTONIC, CInt(TFD_NONBLOCK) | CInt(TFD_CLOEXEC))
        })
    }

    /// Arms the timer to fire once at `deadline` (`timerfd_settime` with `TFD_TIMER_ABSTIME`).
    /// A deadline in the past fires at once; the kernel takes one beyond its range as never.
    public func arm(at deadline: MonotonicInstant) throws(Errno) {
        // An all-zero it_value disarms, so the earliest expressible deadline is 1 ns.
        let ns = max(deadline.nanoseconds, 1)
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(ns / 1_000_000_000)
        spec.it_value.tv_nsec = Int(ns % 1_000_000_000)
        _ = try valueOrErrno("timerfd_settime") { timerfd_settime(descriptor.rawValue, CInt(TFD_TIMER_ABSTIME), &spec, nil) }
    }

    /// Disarms the timer (`timerfd_settime` with a zero time).
    public func disarm() throws(Errno) {
        var spec = itimerspec()
        _ = try valueOrErrno("timerfd_settime") { timerfd_settime(descriptor.rawValue, 0, &spec, nil) }
    }

    /// Consumes the expiration count (`read(2)` of the timerfd): how many times it fired, or
    /// ``IOResult/wouldBlock`` when it has not fired since the last time.
    public func acknowledge() throws(Errno) -> IOResult<UInt64> {
        var count: UInt64 = 0
        let result = try withUnsafeMutableBytes(of: &count) { raw throws(Errno) in try descriptor.read(into: raw) }
        guard case .processed = result else { return .wouldBlock }
        return .processed(count)
    }
}
