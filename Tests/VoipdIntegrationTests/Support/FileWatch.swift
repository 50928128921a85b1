import Glibc
import VoipdSystem

/// Waits until the file at `path` (a log a process appends to) contains `text`, woken by
/// inotify each time the file changes rather than by reading it over and over.
func waitForText(_ text: String, in path: String, timeout: Duration = .seconds(20)) throws {
    let watch = inotify_init1(Int32(IN_CLOEXEC))
    guard watch >= 0 else { throw Errno.current("inotify_init1") }
    defer { close(watch) }
    // Watched before it is read: a write in between still wakes the wait.
    guard inotify_add_watch(watch, path, UInt32(IN_MODIFY)) >= 0 else { throw Errno.current("inotify_add_watch(\(path))") }
    let deadline = Deadline(timeout)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !(ProcFS.read(path) ?? "").contains(text) {
        guard waitReadable(watch, deadline) else {
            throw TimedOut(description: "\"\(text)\" never appeared in \(path):\n\(ProcFS.read(path) ?? "")")
        }
        _ = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
    }
}
