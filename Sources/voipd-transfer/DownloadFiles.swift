import Glibc
import VoipdSystem
import VoipdTransfers

/// Why a file could not be used, said as the app will read it.
struct FileProblem: Error {
    var message: String
    /// The partial file is locked by another agent (one of a voipd that has just ended,
    /// still finishing its last write): the attempt may be tried again.
    var inUse = false
}

/// A download's two files, reached through their directory: the partial file the body is
/// written to, and the destination it is renamed to when complete. The directory must be
/// the agent's user's own (the agent runs as the app's user, so the kernel's checks are the
/// app's; owning the directory is what "inside what the app owns" means), and both names
/// are opened without following a symbolic link.
final class DownloadFiles {
    let destination: String
    let partialPath: String
    private let directory: FileDescriptor
    private let destinationName: String
    private let partialName: String

    init(destination: String, partialPath: String, task: TransferTaskID) throws(FileProblem) {
        do {
            try TransferValidation.validatePath(destination, role: "destination")
        } catch {
            throw FileProblem(message: error.message)
        }
        guard partialPath == TransferTask.partialPath(destination: destination, task: task) else {
            throw FileProblem(message: "the partial file \(partialPath) is not the one of \(destination)")
        }
        let slash = destination.lastIndex(of: "/")!
        let directoryPath = slash == destination.startIndex ? "/" : String(destination[..<slash])
        self.destination = destination
        self.partialPath = partialPath
        destinationName = String(destination[destination.index(after: slash)...])
        partialName = String(partialPath[partialPath.index(after: partialPath.lastIndex(of: "/")!)...])
        do {
            directory = try openFile(directoryPath, flags: O_RDONLY | O_DIRECTORY)
        } catch {
            throw FileProblem(message: "cannot open the directory \(directoryPath): \(Self.reason(error))")
        }
        var status = stat()
        guard fstat(directory.rawValue, &status) == 0 else {
            throw FileProblem(message: "cannot examine \(directoryPath): \(Self.reason(Errno.current()))")
        }
        guard status.st_uid == geteuid() else {
            throw FileProblem(message: "the directory \(directoryPath) belongs to uid \(status.st_uid), not to the app's uid \(geteuid())")
        }
    }

    /// Opens the partial file (created if there is none) for writing at its end, and locks
    /// it (`flock(LOCK_EX | LOCK_NB)`) for as long as the descriptor is open. Two agents
    /// must never write the same partial file: on a fast restart or an upgrade, the agent of
    /// the voipd that ended may still be finishing a write when the new one asks for a
    /// Range from the file's size. The lock goes with the old agent's last descriptor, so a
    /// file found locked is `inUse`, and its size is read only once the lock is held.
    func openPartial() throws(FileProblem) -> FileDescriptor {
        let fd = openat(directory.rawValue, partialName, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileProblem(message: "cannot write \(partialPath): \(Self.reason(Errno.current()))") }
        let file = FileDescriptor(adopting: fd)
        var status = stat()
        guard fstat(file.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw FileProblem(message: "\(partialPath) is not a regular file")
        }
        guard flock(file.rawValue, LOCK_EX | LOCK_NB) == 0 else {
            let error = Errno.current()
            throw FileProblem(message: "\(partialPath) is in use by another transfer agent (\(Self.reason(error)))", inUse: error == .wouldBlock)
        }
        return file
    }

    /// The bytes a partial file holds.
    static func size(of partial: borrowing FileDescriptor) throws(FileProblem) -> Int64 {
        var status = stat()
        guard fstat(partial.rawValue, &status) == 0 else { throw FileProblem(message: "cannot examine a partial file: \(reason(Errno.current()))") }
        return Int64(status.st_size)
    }

    /// Empties the partial file (the server sent the whole resource again).
    static func empty(_ partial: borrowing FileDescriptor) throws(FileProblem) {
        guard ftruncate(partial.rawValue, 0) == 0 else { throw FileProblem(message: "cannot empty a partial file: \(reason(Errno.current()))") }
    }

    /// Makes the complete file the destination, atomically (`renameat`).
    func commit() throws(FileProblem) {
        guard renameat(directory.rawValue, partialName, directory.rawValue, destinationName) == 0 else {
            throw FileProblem(message: "cannot rename \(partialPath) to \(destination): \(Self.reason(Errno.current()))")
        }
    }

    /// Removes the partial file, if there is one.
    func discard() {
        _ = unlinkat(directory.rawValue, partialName, 0)
    }

    static func reason(_ error: Errno) -> String { String(cString: strerror(error.rawValue)) }
}

/// The source of an upload, checked as the agent's user before URLSession reads it.
enum UploadSource {
    /// The file's size; a clear error when the app's user cannot read it.
    static func check(_ path: String) throws(FileProblem) -> Int64 {
        do {
            try TransferValidation.validatePath(path, role: "source")
        } catch {
            throw FileProblem(message: error.message)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileProblem(message: "cannot read \(path): \(DownloadFiles.reason(Errno.current()))") }
        let file = FileDescriptor(adopting: fd)
        var status = stat()
        guard fstat(file.rawValue, &status) == 0 else { throw FileProblem(message: "cannot examine \(path): \(DownloadFiles.reason(Errno.current()))") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw FileProblem(message: "\(path) is not a regular file") }
        return Int64(status.st_size)
    }
}

/// Removes a partial file left by an earlier attempt; only a name of the partial-file form.
func discardPartialFile(_ path: String) {
    let name = path.split(separator: "/").last.map(String.init) ?? ""
    guard path.hasPrefix("/"), name.hasPrefix("."), name.hasSuffix(".voipd-partial"), !path.contains("/../") else {
        Log.error("refusing to remove \(path): not a partial file")
        return
    }
    _ = unlink(path)
}
