import Glibc
import VoipdVocabulary

extension MonotonicInstant {
    /// Now (`clock_gettime(CLOCK_MONOTONIC)`).
    public static var now: MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(sinceOrigin: .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec))
    }
}

/// The timeout for `poll` or `epoll_wait` that waits `remaining`, in whole milliseconds
/// rounded up (so that the wait does not end just before it), and 0 when nothing remains:
/// a wait whose deadline passed by less than a second has whole seconds 0 and negative
/// attoseconds, and a negative timeout would wait forever.
public func pollTimeout(after remaining: Duration) -> CInt {
    guard remaining > .zero else { return 0 }
    let (seconds, attoseconds) = remaining.components
    return CInt(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
}

/// The timeout for `poll` or `epoll_wait` that ends at `deadline` (``pollTimeout(after:)``):
/// -1 (no timeout) for nil, at most `limit`.
public func pollTimeout(until deadline: MonotonicInstant?, limit: Duration = .seconds(600)) -> CInt {
    guard let deadline else { return -1 }
    return pollTimeout(after: min(deadline - .now, limit))
}

/// The same for a deadline of `ContinuousClock`, the SIP stack's and the softphone's clock,
/// with no limit: -1 (no timeout) for nil.
public func pollTimeout(until deadline: ContinuousClock.Instant?) -> CInt {
    guard let deadline else { return -1 }
    return pollTimeout(after: deadline - .now)
}

/// Wall-clock time as seconds since the epoch, for timestamps people read.
public func wallClockSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Wall-clock time as seconds since the epoch to the microsecond (the double nearest a
/// whole number of microseconds): 16 digits in JSON, which voipd writes and a client reads
/// exactly without `strtod` (a time to the nanosecond takes 17 more often than not). For
/// the times a reply carries on the request path (a held socket's `registeredAt`).
public func wallClockMicroseconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000) / 1e6
}
