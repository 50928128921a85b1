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

/// How a wait for what a program writes to a file ended.
public enum ProgramOutputWait: Equatable, Sendable {
    /// The file's content satisfied the condition.
    case satisfied
    /// The program ended first, without writing what was awaited (all it wrote was read).
    case ended
    /// The deadline passed first.
    case timedOut
}

/// Waits until what the file at `path` holds satisfies `satisfied`, woken by inotify each
/// time the file changes, unless the program writing it ends first (`process`: its pidfd,
/// readable once it has ended; a program that cannot start ends without writing what is
/// awaited, and waiting on until `deadline` would only hide that).
public func waitForContent(of path: String, whileRunning process: borrowing FileDescriptor, until deadline: MonotonicInstant,
                           _ satisfied: (String) -> Bool) throws -> ProgramOutputWait {
    let watch = try inotifyWatch(directory(of: path), events: IN_CREATE | IN_MODIFY | IN_MOVED_TO)
    return try waitForChange(watch, orEndOf: process.rawValue, until: deadline) { satisfied(ProcFS.read(path) ?? "") }
}

/// What the file at `path` holds past its first `offset` bytes (what a program appended to a
/// log since its size was `offset`).
public func fileText(_ path: String, from offset: Int64) -> String {
    String(decoding: (ProcFS.read(path) ?? "").utf8.dropFirst(Int(offset)), as: UTF8.self)
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
    try waitForChange(watch, orEndOf: nil, until: deadline, done) == .satisfied
}

/// Reads `watch`'s events until `done()` holds, `deadline` passes, or the pidfd `process`
/// becomes readable (its process has ended; `done()` is asked once more then, as the
/// program's last words may be what it awaits).
private func waitForChange(_ watch: borrowing FileDescriptor, orEndOf process: CInt?, until deadline: MonotonicInstant,
                           _ done: () -> Bool) throws -> ProgramOutputWait {
    var watched = [pollfd(fd: watch.rawValue, events: Int16(POLLIN), revents: 0)]
    if let process { watched.append(pollfd(fd: process, events: Int16(POLLIN), revents: 0)) }
    while !done() {
        guard MonotonicInstant.now < deadline else { return .timedOut }
        for index in watched.indices { watched[index].revents = 0 }
        guard try poll(&watched, timeoutMilliseconds: pollTimeout(until: deadline)) > 0 else { continue }
        if watched[0].revents != 0 { _ = try watch.read(upTo: 4096) }
        if watched.count > 1 && watched[1].revents != 0 { return done() ? .satisfied : .ended }
    }
    return .satisfied
}
