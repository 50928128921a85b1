import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

extension PidFd {
    /// SIGTERM, then SIGKILL if it has not exited within `milliseconds`; reaps it. For the
    /// servers a benchmark starts, at the end (failures to signal a process already gone
    /// do not matter there).
    func terminate(graceMilliseconds milliseconds: Int32 = 5000) {
        try? send(SIGTERM)
        if (try? waitReadable(descriptor.rawValue, until: MonotonicInstant.now + .milliseconds(milliseconds))) != true { try? send(SIGKILL) }
        _ = try? waitForExit()
    }
}
