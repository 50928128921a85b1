import CVoipd
import Glibc

/// Sets how late the kernel may fire the calling thread's timers, timerfds included, so
/// as to group wake-ups (`PR_SET_TIMERSLACK`; 50 µs by default). A loop re-reading a state on
/// a schedule of tens of microseconds (``FreezeConfirmation``) wants less.
public func setTimerSlack(_ slack: Duration) throws {
    let nanoseconds = UInt(max(slack.components.seconds, 0)) * 1_000_000_000 + UInt(max(slack.components.attoseconds, 0) / 1_000_000_000)
    // 0 would mean "back to the default".
    _ = try valueOrErrno("prctl(PR_SET_TIMERSLACK)") { voipd_prctl_set_timerslack(max(nanoseconds, 1)) }
}
