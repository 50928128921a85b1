import Glibc
import VoipdSystem

/// A point in time a wait must not pass.
struct Deadline {
    let end: MonotonicInstant

    init(_ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        end = MonotonicInstant(nanoseconds: MonotonicInstant.now.nanoseconds + UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000))
    }

    var remainingMilliseconds: Int32 {
        let now = MonotonicInstant.now.nanoseconds
        return now >= end.nanoseconds ? 0 : Int32(min((end.nanoseconds - now) / 1_000_000 + 1, 600_000))
    }

    var hasPassed: Bool { MonotonicInstant.now >= end }
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Waits until `fd` is readable or the deadline passes.
func waitReadable(_ fd: CInt, _ deadline: Deadline) -> Bool {
    while true {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&poller, 1, deadline.remainingMilliseconds)
        if n > 0 { return true }
        if n == 0 || deadline.hasPassed { return false }
        if errno != EINTR { return false }
    }
}
