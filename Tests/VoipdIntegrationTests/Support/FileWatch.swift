import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// Waits until the file at `path` (a log a process appends to) contains `text`, woken by
/// inotify each time the file changes rather than by reading it over and over.
func waitForText(_ text: String, in path: String, timeout: Duration = .seconds(20)) throws {
    guard try waitForText(text, in: path, until: MonotonicInstant.now + timeout) else {
        throw TimedOut(description: "\"\(text)\" never appeared in \(path):\n\(ProcFS.read(path) ?? "")")
    }
}
