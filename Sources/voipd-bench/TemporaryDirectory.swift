import Glibc
import VoipdSystem

/// A private directory under /tmp for sockets, logs and the floor's binary; removed (with
/// the files in it) when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/voipd-bench.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Errno.current("mkdtemp") }
        path = String(cString: made)
    }

    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = DirectoryEntry.name(entry)
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}
