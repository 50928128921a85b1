import Glibc
import VoipdSystem

/// A fresh private directory under /tmp, named `/tmp/PREFIX.XXXXXX` (mode 0755, so that a
/// program run as another uid can be let in), removed with ``removeTree(_:)``.
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
    guard let result = mkdtemp(&template) else { throw Errno.current("mkdtemp") }
    chmod(result, 0o755)
    return String(cString: result)
}

/// Removes `path` and everything below it; only a path under /tmp, so that a wrong argument
/// cannot take anything else with it. Symbolic links are removed, never followed.
public func removeTree(_ path: String) {
    guard path.hasPrefix("/tmp/") else { return }
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = DirectoryEntry.name(entry)
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            if entry.pointee.d_type == UInt8(DT_DIR) { removeTree(child) } else { unlink(child) }
        }
        closedir(directory)
    }
    rmdir(path)
}

/// A directory from ``makeTemporaryDirectory(_:)`` removed, with all that is in it, when the
/// value goes away.
public final class TemporaryDirectory {
    public let path: String

    public init(_ prefix: String) throws { path = try makeTemporaryDirectory(prefix) }

    deinit { removeTree(path) }
}
