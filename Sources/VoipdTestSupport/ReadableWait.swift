import Glibc
import VoipdSystem
import VoipdVocabulary

/// Waits until `fd` is readable (or has hung up), through interruptions, until `deadline`:
/// false if it passes first.
public func waitReadable(_ fd: CInt, until deadline: MonotonicInstant) throws(Errno) -> Bool {
    var watched = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
    repeat {
        if try poll(&watched, timeoutMilliseconds: pollTimeout(until: deadline)) > 0 { return true }
    } while MonotonicInstant.now < deadline
    return false
}
