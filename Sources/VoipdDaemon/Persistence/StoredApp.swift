import FoundationEssentials
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
    /// How to start it; the same JSON object as before ``LaunchCommand`` (records in a
    /// store outlive the voipd that wrote them).
    var launch: LaunchCommand?
    /// Its process's keep-alive, when it asked for one: a process the next voipd takes back
    /// suspended is woken by it still (``RecordedKeepAlive``). Written when the app sets it,
    /// not at each wake: its instant may be one already past.
    var keepAlive: RecordedKeepAlive?

    /// A memfd holding the record as JSON, for FDSTORE=1.
    func memoryFile() throws -> FileDescriptor {
        let file = try FileDescriptor.memoryFile(named: "voipd-app")
        try file.writeAll(JSONEncoder().encode(self))
        return file
    }

    /// The largest record read back.
    static let largest = 1 << 20

    /// Reads a stored record (from offset 0: the store passes the same open file each time).
    static func read(_ fd: borrowing FileDescriptor) throws -> StoredApp {
        try JSONDecoder().decode(StoredApp.self, from: Data(fd.readFromStart(limit: largest)))
    }
}
