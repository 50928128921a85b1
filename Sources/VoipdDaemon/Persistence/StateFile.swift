import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdVocabulary

/// Where ``RecoveryState`` is kept between two runs of voipd: a JSON file in a directory
/// only root and voipd's user can write (``TrustedDirectory``), replaced whole each time.
final class StateFile {
    /// A larger file is not read: a thousand apps with long command lines take a few MB.
    static let largest = 16 << 20
    /// How long changes are gathered before the file is written.
    static let coalescing: Duration = .seconds(1)

    let directory: TrustedDirectory
    let name: String
    /// The lock on `NAME.lock` beside the file, held for the daemon's life (an in-place
    /// upgrade carries it over): one voipd at a time writes the file.
    let lock: FileDescriptor
    /// Something the file records has changed since it was last written.
    var isStale = true
    /// The processes the file on disk names.
    var recorded: Set<ProcessIdentity> = []
    /// Apps whose held sockets changed since the file was written: its list of them is out
    /// of date, and is written before the app's process is next stopped.
    var socketsChanged: Set<AppID> = []
    /// When the file was last written (or tried to be), on the daemon's clock.
    var lastWritten: MonotonicInstant?
    /// A failure to write is logged once, until a write succeeds again.
    var failing = false
    /// False while there is no file on disk: none was found at start, and none has been
    /// written since. No file reads as no apps (``load()``), so a state of no apps is not
    /// written then: a voipd that starts with nothing to record encodes nothing before READY=1.
    var onDisk = true

    init(directory: consuming TrustedDirectory, name: String, lock: consuming FileDescriptor) {
        self.directory = directory
        self.name = name
        self.lock = lock
    }

    var path: String { directory.path + "/" + name }

    /// The lock file's name for a state file's: `voipd.state` → `voipd.lock`. It holds the
    /// pid of the voipd that has it.
    static func lockName(for name: String) -> String {
        String(name.dropLast(".state".count)) + ".lock"
    }

    /// The file's name for a control socket: the socket's name with `.state` for its
    /// extension ("voipd.sock" → "voipd.state"), so that voipds with sockets of different
    /// names can share a directory.
    static func name(forSocket socketPath: String) -> String {
        let file = socketPath.split(separator: "/").last.map(String.init) ?? "voipd"
        let stem = file.lastIndex(of: ".").map { file[..<$0] }.map(String.init) ?? file
        return (stem.isEmpty ? file : stem) + ".state"
    }

    /// The state a previous voipd wrote, or nil when there is none.
    func load() throws -> RecoveryState? {
        guard let content = try directory.read(name, limit: Self.largest) else {
            onDisk = false
            return nil
        }
        return try JSONDecoder().decode(RecoveryState.self, from: Data(content))
    }

    func save(_ state: RecoveryState) throws {
        if state.apps.isEmpty && !onDisk {
            isStale = false
            recorded = []
            socketsChanged = []
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try directory.replace(name, with: Array(try encoder.encode(state)))
        onDisk = true
        isStale = false
        recorded = Set(state.apps.compactMap { $0.process?.identity })
        socketsChanged = []
    }
}

/// The state file is another voipd's: that one still runs (it holds the lock), so this one
/// must not start, or both would write the file and supervise the same apps.
struct StateFileInUse: Error, CustomStringConvertible {
    var path: String
    var lockPath: String
    /// What the lock file says: the pid of the voipd that holds it.
    var holder: String?

    var description: String {
        let who = holder.map { "voipd pid \($0)" } ?? "another voipd"
        return """
            the state file \(path) is in use: \(who) holds \(lockPath) and still runs; stop it first, \
            or give this voipd another control socket name or stateDirectory
            """
    }
}
