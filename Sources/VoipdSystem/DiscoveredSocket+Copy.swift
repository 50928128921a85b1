import Glibc

extension DiscoveredSocket {
    /// A descriptor of voipd's own (close-on-exec) for the same socket, taken with
    /// `pidfd_getfd` from the first holder that allows it: data that arrives on the socket is
    /// readable from either, and the program keeps its descriptor. The holder's process is
    /// reached through `root` when it is the root, else through a pidfd opened now.
    ///
    /// Between the discovery and now the program may have closed the descriptor and opened
    /// another under the same number, or a pid may have been reused: the copy is kept only if
    /// it is still this socket (`fstat`: a socket with this inode); otherwise it is closed and
    /// `ESTALE` is thrown. When every holder fails, the first holder's error is thrown: `EPERM`
    /// (ptrace access refused: see ``YamaPtraceScope``), `EBADF` (the descriptor was closed),
    /// `ESRCH` (the process exited).
    public func takeCopy(root: borrowing PidFd) throws -> FileDescriptor {
        var firstError: Errno?
        for holder in holders {
            do {
                let copy = holder.pid == root.pid ? try root.duplicateDescriptor(holder.descriptor)
                    : try PidFd(pid: holder.pid).duplicateDescriptor(holder.descriptor)
                var info = stat()
                guard fstat(copy.rawValue, &info) == 0 else { throw Errno.current("fstat") }
                guard info.st_mode & S_IFMT == S_IFSOCK, UInt64(info.st_ino) == socket.inode else {
                    throw Errno(ESTALE, call: "\(holder) is no longer socket inode \(socket.inode)")
                }
                return copy
            } catch let error as Errno {
                if firstError == nil { firstError = error }
            }
        }
        throw firstError ?? Errno(EBADF, call: "no descriptor holds socket inode \(socket.inode)")
    }
}
