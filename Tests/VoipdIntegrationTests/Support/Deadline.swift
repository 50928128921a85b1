import Glibc
import VoipdSystem
import VoipdTestSupport
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

/// Waits until `fd` is readable or the deadline passes (an error is a no).
func waitReadable(_ fd: CInt, _ deadline: Deadline) -> Bool {
    (try? waitReadable(fd, until: deadline.end)) ?? false
}
