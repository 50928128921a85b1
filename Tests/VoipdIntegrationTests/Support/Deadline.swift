import Glibc
import VoipdSystem
import VoipdVocabulary

/// A point in time a wait must not pass.
struct Deadline {
    let end: MonotonicInstant

    init(_ timeout: Duration) { end = .now + timeout }

    var remainingMilliseconds: Int32 { pollTimeout(until: end) }

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
