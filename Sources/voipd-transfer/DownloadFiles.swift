import Glibc
import VoipdSystem
import VoipdTransfers

/// Why a file could not be used, said as the app will read it.
struct FileProblem: Error {
    var message: String
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

    /// The bytes the partial file holds (0 when there is none).
    var partialSize: Int64 {
        var status = stat()
        guard fstatat(directory.rawValue, partialName, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFREG else { return 0 }
        return Int64(status.st_size)
    }

    /// Opens the partial file for writing at its end, emptied first when `truncate`.
    func openPartial(truncate: Bool) throws(FileProblem) -> FileDescriptor {
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND)
        let fd = openat(directory.rawValue, partialName, flags, 0o600)
        guard fd >= 0 else { throw FileProblem(message: "cannot write \(partialPath): \(Self.reason(Errno.current()))") }
        let file = FileDescriptor(adopting: fd)
        var status = stat()
        guard fstat(file.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw FileProblem(message: "\(partialPath) is not a regular file")
        }
        return file
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
