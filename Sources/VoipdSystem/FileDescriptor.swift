import CVoipd
import Glibc

/// An owned file descriptor: closed exactly once, by ``close()`` or when the value is
/// dropped. Not copyable, so ownership is explicit: ``duplicate()`` makes a second
/// descriptor, ``release()`` hands the raw number to a new owner.
public struct FileDescriptor: ~Copyable {
    /// The descriptor number. Borrowed use only: whoever holds this value owns it.
    public let rawValue: CInt

    /// Takes ownership of a raw descriptor number.
    public init(adopting rawValue: CInt) {
        precondition(rawValue >= 0, "adopting an invalid descriptor")
        self.rawValue = rawValue
    }

    deinit {
        // close(2) is never retried: on Linux the descriptor is gone even after EINTR.
        _ = Glibc.close(rawValue)
    }

    /// Closes the descriptor (`close(2)`), reporting an error the kernel returns.
    public consuming func close() throws {
        let fd = rawValue
        discard self
        if Glibc.close(fd) != 0 { throw Errno.current("close") }
    }

    /// Gives up ownership without closing; the caller now owns the number.
    public consuming func release() -> CInt {
        let fd = rawValue
        discard self
        return fd
    }

    /// A second descriptor for the same open file description (`fcntl(F_DUPFD_CLOEXEC)`).
    public borrowing func duplicate() throws -> FileDescriptor {
        try FileDescriptor(duplicating: rawValue)
    }

    /// A new descriptor (close-on-exec) for the open file description behind `raw`, which
    /// stays with its owner (`fcntl(F_DUPFD_CLOEXEC)`).
    public init(duplicating raw: CInt) throws {
        let fd = try valueOrErrno("fcntl(F_DUPFD_CLOEXEC)") { fcntl(raw, F_DUPFD_CLOEXEC, 0) }
        self.init(adopting: fd)
    }

    /// Sets or clears `O_NONBLOCK` (`fcntl(F_SETFL)`).
    public borrowing func setNonBlocking(_ enabled: Bool = true) throws {
        let flags = try valueOrErrno("fcntl(F_GETFL)") { voipd_fcntl_getfl(rawValue) }
        let updated = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if updated != flags { _ = try valueOrErrno("fcntl(F_SETFL)") { voipd_fcntl_setfl(rawValue, updated) } }
    }

    /// Reads up to `count` bytes (`read(2)`); an empty array means end of file.
    public borrowing func read(upTo count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = try buffer.withUnsafeMutableBytes { raw in
            try retryingOnInterrupt("read") { Glibc.read(rawValue, raw.baseAddress, count) }
        }
        buffer.removeSubrange(n...)
        return buffer
    }

    /// Reads to the end of the file; a file longer than `limit` bytes is `EFBIG`.
    public borrowing func readToEnd(limit: Int) throws -> [UInt8] {
        var contents: [UInt8] = []
        while true {
            let chunk = try read(upTo: 65536)
            if chunk.isEmpty { return contents }
            guard contents.count + chunk.count <= limit else { throw Errno.fileTooLarge }
            contents.append(contentsOf: chunk)
        }
    }

    /// Writes all of `bytes` (`write(2)`), looping over short writes.
    public borrowing func writeAll(_ bytes: some Collection<UInt8>) throws {
        let array = Array(bytes)
        var offset = 0
        while offset < array.count {
            let n = try array.withUnsafeBytes { raw in
                try retryingOnInterrupt("write") { Glibc.write(rawValue, raw.baseAddress! + offset, array.count - offset) }
            }
            offset += n
        }
    }
}

/// Opens a file (`open(2)`) with `O_CLOEXEC` always added.
public func openFile(_ path: String, flags: CInt, mode: mode_t = 0o644) throws -> FileDescriptor {
    let fd = try retryingOnInterrupt("open(\(path))") { voipd_open(path, flags | O_CLOEXEC, mode) }
    return FileDescriptor(adopting: fd)
}

/// Two descriptors made together: both ends of a pipe or of a socket pair.
@frozen
public struct DescriptorPair: ~Copyable {
    public var first: FileDescriptor
    public var second: FileDescriptor
}

/// Creates a pipe (`pipe2(O_CLOEXEC)`): `first` is the read end, `second` the write end.
public func makePipe() throws -> DescriptorPair {
    var fds: [CInt] = [-1, -1]
    _ = try valueOrErrno("pipe2") { voipd_pipe2(&fds, O_CLOEXEC) }
    return DescriptorPair(first: FileDescriptor(adopting: fds[0]), second: FileDescriptor(adopting: fds[1]))
}
