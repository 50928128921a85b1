import Glibc
import VoipdSystem
import VoipdVocabulary

/// Waits until `path` exists and is not empty (a pid file, a download), woken by inotify on
/// its directory rather than by looking again and again: false if `deadline` passes first.
public func waitForNonEmptyFile(_ path: String, until deadline: MonotonicInstant) throws -> Bool {
    let watch = try inotifyWatch(directory(of: path), events: IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO)
    return try waitForChange(watch, until: deadline) { fileSize(path).map { $0 > 0 } ?? false }
}

/// Waits until the file at `path` (a log a process appends to) contains `text`, woken by
/// inotify each time the file changes: false if `deadline` passes first. The file need not
/// exist yet (a program launched a moment ago may not have opened its log).
public func waitForText(_ text: String, in path: String, until deadline: MonotonicInstant) throws -> Bool {
    try waitForContent(of: path, until: deadline) { $0.contains(text) }
}

/// Waits until what the file at `path` holds satisfies `satisfied`, woken by inotify each
/// time the file changes: false if `deadline` passes first. The file need not exist yet.
public func waitForContent(of path: String, until deadline: MonotonicInstant, _ satisfied: (String) -> Bool) throws -> Bool {
    // Watched before it is read: a write in between still wakes the wait. The directory is
    // watched rather than the file, so that its creation wakes the wait too.
    let watch = try inotifyWatch(directory(of: path), events: IN_CREATE | IN_MODIFY | IN_MOVED_TO)
    return try waitForChange(watch, until: deadline) { satisfied(ProcFS.read(path) ?? "") }
}

/// Waits until nothing is at `path` (a file another process removes), woken by inotify on
/// its directory: false if `deadline` passes first.
public func waitForRemoval(_ path: String, until deadline: MonotonicInstant) throws -> Bool {
    let watch = try inotifyWatch(directory(of: path), events: IN_DELETE | IN_MOVED_FROM)
    return try waitForChange(watch, until: deadline) { access(path, F_OK) != 0 }
}

/// The directory `path` names a file in.
private func directory(of path: String) -> String {
    path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
}

/// The size of the file at `path`, nil when there is none.
public func fileSize(_ path: String) -> Int64? {
    var status = stat()
    return stat(path, &status) == 0 ? Int64(status.st_size) : nil
}

/// Writes `size` random bytes to a new file at `path` (readable by all).
public func makeRandomFile(_ path: String, size: Int) throws {
    let random = try openFile("/dev/urandom", flags: O_RDONLY)
    let output = try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
    var left = size
    while left > 0 {
        let chunk = try random.read(upTo: min(left, 1 << 20))
        try output.writeAll(chunk)
        left -= chunk.count
    }
}

private func inotifyWatch(_ path: String, events: CInt) throws -> FileDescriptor {
    let watch = FileDescriptor(adopting: try valueOrErrno("inotify_init1") { inotify_init1(CInt(IN_CLOEXEC)) })
    _ = try valueOrErrno("inotify_add_watch(\(path))") { inotify_add_watch(watch.rawValue, path, UInt32(events)) }
    return watch
}

/// Reads `watch`'s events until `done()` holds or `deadline` passes.
private func waitForChange(_ watch: borrowing FileDescriptor, until deadline: MonotonicInstant, _ done: () -> Bool) throws -> Bool {
    while !done() {
        guard MonotonicInstant.now < deadline else { return false }
        if try waitReadable(watch, timeoutMilliseconds: pollTimeout(until: deadline)) {
            _ = try watch.read(upTo: 4096)
        }
    }
    return true
}
