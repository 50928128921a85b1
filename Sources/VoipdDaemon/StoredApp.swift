import CVoipd
import Foundation
import Glibc
import VoipdLifecycle
import VoipdSystem

/// What the service manager's descriptor store keeps of an app beside its sockets, so that a
/// voipd started after a crash knows who owns them, how to start the app again, and which
/// process may still be running (and, after a crash, still stopped).
struct StoredApp: Codable {
    static let recordName = "#record"
    static let processName = "#process"

    var uid: UInt32
    var policy: AppPolicy
    var launch: DaemonSnapshot.Launch?

    /// A memfd holding the record as JSON, for FDSTORE=1.
    func memfd() throws -> FileDescriptor {
        let fd = FileDescriptor(adopting: try valueOrErrno("memfd_create") { voipd_memfd_create("voipd-app", 1 /* MFD_CLOEXEC */) })
        try fd.writeAll(JSONEncoder().encode(self))
        return fd
    }

    /// Reads a stored record (from offset 0: the store passes the same open file each time).
    static func read(_ fd: borrowing FileDescriptor) throws -> StoredApp {
        var data = Data()
        var offset: off_t = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd.rawValue, $0.baseAddress, $0.count, offset) }
            if n < 0 { throw Errno.current("pread") }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
            offset += off_t(n)
        }
        return try JSONDecoder().decode(StoredApp.self, from: data)
    }
}

/// The pid a pidfd refers to (/proc/self/fdinfo), or nil once the process is gone.
func pid(ofPidfd fd: CInt) -> pid_t? {
    guard let info = ProcFS.read("/proc/self/fdinfo/\(fd)") else { return nil }
    for line in info.split(separator: "\n") where line.hasPrefix("Pid:") {
        guard let pid = pid_t(line.dropFirst(4).trimmingCharacters(in: .whitespaces)), pid > 0 else { return nil }
        return pid
    }
    return nil
}
