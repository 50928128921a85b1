import Foundation
import Glibc
import VoipdSystem
import VoipdVocabulary

/// Whether the tests run under CI (`CI=true`): there a missing tool is a failure, not a skip.
let runningUnderCI = ProcessInfo.processInfo.environment["CI"] == "true"

/// Run when the tool is there, and always under CI, where its absence then fails the test.
func toolAvailableOrCI(_ path: String) -> Bool { access(path, X_OK) == 0 || runningUnderCI }

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh private directory under /tmp (mode 0755, so another uid can be let in), removed
/// with ``removeTree(_:)``.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
    guard let result = mkdtemp(&template) else { throw Errno.current("mkdtemp") }
    chmod(result, 0o755)
    return String(cString: result)
}

func removeTree(_ path: String) {
    guard path.hasPrefix("/tmp/") else { return }
    try? FileManager.default.removeItem(atPath: path)
}

/// Writes `size` random bytes to `path` (readable by all).
func makeRandomFile(_ path: String, size: Int) throws {
    let random = try openFile("/dev/urandom", flags: O_RDONLY)
    let output = try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
    var left = size
    while left > 0 {
        let chunk = try random.read(upTo: min(left, 1 << 20))
        try output.writeAll(chunk)
        left -= chunk.count
    }
}

/// The SHA-256 of a file, by coreutils' sha256sum (Foundation on Linux has no digest).
func sha256(_ path: String) throws -> String {
    let directory = try makeTemporaryDirectory("voipd-sha")
    defer { removeTree(directory) }
    let output = try openFile(directory + "/out", flags: O_WRONLY | O_CREAT | O_TRUNC)
    let process = try spawn(SpawnRequest(arguments: ["sha256sum", path], environment: currentEnvironment(), standardOutput: output.rawValue))
    let status = try process.waitForExit()
    guard status == .exited(0), let text = ProcFS.read(directory + "/out"), let digest = text.split(separator: " ").first else {
        throw TestFailure("sha256sum \(path) failed: \(status)")
    }
    return String(digest)
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

func fileSize(_ path: String) -> Int64? {
    var status = stat()
    return stat(path, &status) == 0 ? Int64(status.st_size) : nil
}

/// Waits until `path` exists and is not empty, woken by inotify on its directory.
func waitForFile(_ path: String, timeout: Double) throws {
    let watch = inotify_init1(Int32(IN_CLOEXEC))
    guard watch >= 0 else { throw Errno.current("inotify_init1") }
    defer { close(watch) }
    let directory = String(path[..<path.lastIndex(of: "/")!])
    guard inotify_add_watch(watch, directory, UInt32(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO)) >= 0 else {
        throw Errno.current("inotify_add_watch(\(directory))")
    }
    let end = MonotonicInstant.now + .seconds(timeout)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while (fileSize(path) ?? 0) == 0 {
        guard MonotonicInstant.now < end else { throw TestFailure("\(path) did not appear within \(timeout) s") }
        var poller = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, pollTimeout(until: end)) > 0 {
            _ = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
        }
    }
}
