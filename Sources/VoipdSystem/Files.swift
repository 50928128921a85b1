import Glibc

/// Removes a file or a socket's path (`unlink(2)`); one that is not there is no error.
public func removeFile(_ path: String) throws(Errno) {
    do {
        _ = try valueOrErrno("unlink(\(path))") { unlink(path) }
    } catch .noSuchFileOrDirectory {
        return
    }
}

/// Makes a directory (`mkdir(2)`); one that is there already is no error.
public func makeDirectory(_ path: String, mode: mode_t) throws(Errno) {
    do {
        _ = try valueOrErrno("mkdir(\(path))") { mkdir(path, mode) }
    } catch .fileExists {
        return
    }
}

/// The status of an open file (`fstat(2)`).
func fileStatus(of fd: borrowing FileDescriptor) throws(Errno) -> stat {
    var info = stat()
    _ = try valueOrErrno("fstat") { fstat(fd.rawValue, &info) }
    return info
}
