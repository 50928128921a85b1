import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdTransfers

/// The durable records of the transfer service, in a directory of voipd's own (0700):
///
///     state.json          TransferEngine.DurableState: sessions, limiters, budgets, numbering
///     tasks/<id>.json     one TransferTask per task, until the app has handled its end
///
/// Each record is written whole to a temporary file, flushed (`fdatasync`) and renamed over
/// the old one, so a crash leaves the old record or the new, never a torn one. The directory
/// is not flushed after each rename: after a power cut a record may be one step old, which
/// only repeats an attempt (a download resumes from its partial file) or a delivery.
/// Partial files are not here: they are the app's, beside their destinations.
public final class TransferStore {
    public let directory: String
    private var tasksDirectory: String { directory + "/tasks" }
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()
    /// state.json as it is on disk (read or written last): the engine asks for a save after
    /// each step, most of which (every start's) change nothing, and each write is a flush.
    private var savedState: Data?

    /// What ``load()`` found.
    public struct Contents {
        public var state: TransferEngine.DurableState?
        public var tasks: [TransferTask]
        /// Records that could not be read; each was renamed to `<name>.corrupt` and is said
        /// here, and the rest carry on.
        public var problems: [String]
    }

    /// Opens (creating them, mode 0700) the directory and its `tasks` folder.
    public init(directory: String) throws {
        self.directory = directory
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        decoder.dateDecodingStrategy = .secondsSince1970
        for path in [directory, directory + "/tasks"] {
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw Errno.current("mkdir(\(path))") }
            var status = stat()
            guard lstat(path, &status) == 0 else { throw Errno.current("stat(\(path))") }
            guard status.st_mode & S_IFMT == S_IFDIR else { throw Errno(ENOTDIR, call: "transfer store \(path)") }
        }
    }

    public func load() throws -> Contents {
        var contents = Contents(state: nil, tasks: [], problems: [])
        if let data = try read(directory + "/state.json") {
            do {
                contents.state = try decoder.decode(TransferEngine.DurableState.self, from: data)
                savedState = data
            } catch {
                contents.problems.append(setAside(directory + "/state.json", error))
            }
        }
        for name in try DirectoryEntry.names(in: tasksDirectory).sorted() {
            let path = tasksDirectory + "/" + name
            if name.hasSuffix(".tmp") {
                // A write that a crash interrupted: the record it was replacing is intact.
                unlink(path)
                continue
            }
            guard name.hasSuffix(".json"), let data = try read(path) else { continue }
            do {
                contents.tasks.append(try decoder.decode(TransferTask.self, from: data))
            } catch {
                contents.problems.append(setAside(path, error))
            }
        }
        return contents
    }

    public func save(_ task: TransferTask) throws {
        try write(encoder.encode(task), to: tasksDirectory + "/\(task.id.rawValue).json")
    }

    public func forget(_ id: TransferTaskID) throws {
        let path = tasksDirectory + "/\(id.rawValue).json"
        if unlink(path) != 0 && errno != ENOENT { throw Errno.current("unlink(\(path))") }
    }

    /// Writes the state unless state.json already holds exactly it.
    public func save(_ state: TransferEngine.DurableState) throws {
        let data = try encoder.encode(state)
        guard data != savedState else { return }
        savedState = nil
        try write(data, to: directory + "/state.json")
        savedState = data
    }

    /// Temporary file, `fdatasync`, `rename`.
    private func write(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp"
        let file = try openFile(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        do {
            try file.writeAll(data)
            _ = try valueOrErrno("fdatasync(\(temporary))") { fdatasync(file.rawValue) }
            try file.close()
        } catch {
            unlink(temporary)
            throw error
        }
        if rename(temporary, path) != 0 {
            let error = Errno.current("rename(\(temporary), \(path))")
            unlink(temporary)
            throw error
        }
    }

    private func read(_ path: String) throws -> Data? {
        guard let file = try openFileIfPresent(path, flags: O_RDONLY | O_NOFOLLOW) else { return nil }
        var data = Data()
        while true {
            let chunk = try file.read(upTo: 65536)
            if chunk.isEmpty { break }
            data.append(contentsOf: chunk)
            // No record is anywhere near this; a file that is says it is not one.
            if data.count > 1 << 24 { throw Errno(EFBIG, call: "read(\(path))") }
        }
        return data
    }

    private func setAside(_ path: String, _ error: any Error) -> String {
        rename(path, path + ".corrupt")
        return "\(path) could not be read and was renamed to \(path).corrupt: \(error)"
    }
}
