import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// Waits until `path` exists and is not empty, woken by inotify on its directory.
func waitForFile(_ path: String, timeout: Double) throws {
    guard try waitForNonEmptyFile(path, until: MonotonicInstant.now + .seconds(timeout)) else {
        throw TestFailure("\(path) did not appear within \(timeout) s")
    }
}
