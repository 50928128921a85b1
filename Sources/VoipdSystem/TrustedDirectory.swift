import CVoipd
import Glibc

/// Why a directory or file cannot be trusted: someone other than root and this process's
/// user could have written it.
public struct UntrustedPath: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String

    public var description: String { "\(path): \(reason)" }
}

/// A directory whose contents only root and this process's (effective) user can change:
/// it and every directory above it are owned by one of them, and none is writable by
/// anyone else, except an ancestor with the sticky bit (as /tmp), where no one else can
/// rename or remove what is not theirs. Files are read and replaced through the directory's
/// descriptor, never through a symbolic link, and a file is read only if it too is this
/// user's and writable by no one else: a privileged process must not act on what an
/// unprivileged user could have planted.
public struct TrustedDirectory: ~Copyable {
    /// The directory's path, symbolic links resolved.
    public let path: String
    private let descriptor: FileDescriptor

    /// Opens the directory at `path`, first making it (mode 0700) if it is missing and its
    /// parent exists.
    public init(path: String) throws {
        try makeDirectory(path, mode: 0o700)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard realpath(path, &buffer) != nil else { throw Errno.current("realpath(\(path))") }
        let resolved = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var checked = stat()
        var prefix = ""
        let components = resolved.split(separator: "/")
        for index in -1..<components.count {
            if index >= 0 { prefix += "/" + components[index] }
            let current = prefix.isEmpty ? "/" : prefix
            checked = try Self.checkDirectory(current, isTarget: index == components.count - 1)
        }
        let opened = try openFile(resolved, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        let info = try fileStatus(of: opened)
        // Renamed or replaced between the check and the open.
        guard info.st_dev == checked.st_dev && info.st_ino == checked.st_ino else {
            throw UntrustedPath(path: resolved, reason: "changed while it was being checked")
        }
        descriptor = opened
        self.path = resolved
    }

    /// One directory of the chain: owned by root or this user; writable by no one else
    /// (an ancestor may be if it is sticky).
    private static func checkDirectory(_ path: String, isTarget: Bool) throws -> stat {
        var info = stat()
        _ = try valueOrErrno("lstat(\(path))") { lstat(path, &info) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw UntrustedPath(path: path, reason: "not a directory") }
        let owner = info.st_uid
        guard owner == 0 || owner == geteuid() else {
            throw UntrustedPath(path: path, reason: "owned by uid \(owner), neither root nor uid \(geteuid())")
        }
        let writableByOthers = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        let sticky = info.st_mode & S_ISVTX != 0
        if writableByOthers && (isTarget || !sticky) {
            throw UntrustedPath(path: path, reason: "writable by others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
        return info
    }

    /// The content of the file `name` in the directory, or nil if there is none. The file
    /// must be a regular file of this user, writable by no one else, and at most `limit` bytes.
    public func read(_ name: String, limit: Int) throws -> [UInt8]? {
        let filePath = "\(path)/\(name)"
        guard let file = try openIfPresent(name, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else { return nil }
        let info = try fileStatus(of: file)
        guard info.st_mode & S_IFMT == S_IFREG else { throw UntrustedPath(path: filePath, reason: "not a regular file") }
        guard info.st_uid == geteuid() else { throw UntrustedPath(path: filePath, reason: "owned by uid \(info.st_uid), not uid \(geteuid())") }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw UntrustedPath(path: filePath, reason: "writable by others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
        guard info.st_size <= limit else { throw UntrustedPath(path: filePath, reason: "\(info.st_size) bytes, more than \(limit)") }
        var content: [UInt8] = []
        while true {
            let chunk = try file.read(upTo: 65536)
            if chunk.isEmpty { return content }
            content += chunk
            guard content.count <= limit else { throw UntrustedPath(path: filePath, reason: "more than \(limit) bytes") }
        }
    }

    /// Replaces the file `name` with `content` at once (written beside it, mode 0600, then
    /// renamed over it): a reader sees the old file or the new one, never a part. Not
    /// synced to disk: the file is for surviving a crash of this process, and processes do
    /// not survive a crash of the machine.
    public func replace(_ name: String, with content: [UInt8]) throws {
        let temporary = name + ".new"
        let file = try open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        // An older file of the same name keeps its mode through O_TRUNC.
        _ = try valueOrErrno("fchmod(\(path)/\(temporary))") { fchmod(file.rawValue, 0o600) }
        try file.writeAll(content)
        try file.close()
        _ = try valueOrErrno("rename(\(temporary), \(name))") { renameat(descriptor.rawValue, temporary, descriptor.rawValue, name) }
    }

    /// Opens the file `name` (made, mode 0600, if missing) and takes an exclusive lock on it
    /// (`flock(LOCK_EX | LOCK_NB)`); then writes `content` in it (who holds it). The lock
    /// belongs to the open file description: it lasts while the descriptor (or a copy made
    /// by `dup` or `fork`) is open, across an exec that keeps it, and ends when the holder
    /// dies. Nil when another open file description holds it. The file must be a regular
    /// file of this user, like a file ``read(_:limit:)`` reads.
    public func lockExclusively(_ name: String, writing content: [UInt8]) throws -> FileDescriptor? {
        let filePath = "\(path)/\(name)"
        let file = try open(name, flags: O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o600)
        let info = try fileStatus(of: file)
        guard info.st_mode & S_IFMT == S_IFREG else { throw UntrustedPath(path: filePath, reason: "not a regular file") }
        guard info.st_uid == geteuid() else { throw UntrustedPath(path: filePath, reason: "owned by uid \(info.st_uid), not uid \(geteuid())") }
        let fd = file.rawValue
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = Errno.current("flock(\(filePath))")
            if error == .wouldBlock { return nil }
            throw error
        }
        _ = try valueOrErrno("ftruncate(\(filePath))") { ftruncate(fd, 0) }
        try file.writeAll(content)
        return file
    }

    /// Removes the file `name`, if it is there.
    public func remove(_ name: String) throws(Errno) {
        do {
            _ = try valueOrErrno("unlink(\(path)/\(name))") { unlinkat(descriptor.rawValue, name, 0) }
        } catch .noSuchFileOrDirectory {
            return
        }
    }

    /// Opens the file `name` of the directory, if there is one.
    private func openIfPresent(_ name: String, flags: CInt) throws(Errno) -> FileDescriptor? {
        do {
            return try open(name, flags: flags)
        } catch .noSuchFileOrDirectory {
            return nil
        }
    }

    /// Opens the file `name` of the directory (`openat(2)`, close-on-exec).
    private func open(_ name: String, flags: CInt, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        FileDescriptor(adopting: try valueOrErrno("open(\(path)/\(name))") { openat(descriptor.rawValue, name, flags | O_CLOEXEC, mode) })
    }
}
