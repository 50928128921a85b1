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

    /// Takes ownership of a descriptor this process inherited (one a service manager passed),
    /// and makes it close-on-exec (`fcntl(F_SETFD)`). Nil when nothing is open under that
    /// number: what the environment says was passed is not trusted to be there.
    public init?(inherited number: CInt) {
        guard number >= 0, fcntl(number, F_SETFD, FD_CLOEXEC) == 0 else { return nil }
        self.init(adopting: number)
    }

    deinit {
        // close(2) is never retried: on Linux the descriptor is gone even after EINTR.
        _ = Glibc.close(rawValue)
    }

    /// Closes the descriptor (`close(2)`), reporting an error the kernel returns (EIO from a
    /// file system). EBADF is a precondition failure: the number was closed twice.
    public consuming func close() throws(Errno) {
        let fd = rawValue
        discard self
        guard Glibc.close(fd) != 0 else { return }
        let error = Errno.current("close")
        precondition(error != .badFileDescriptor, "close(\(fd)): not open (EBADF)")
        throw error
    }

    /// Gives up ownership without closing; the caller now owns the number.
    public consuming func release() -> CInt {
        let fd = rawValue
        discard self
        return fd
    }

    /// A second descriptor (close-on-exec) for the same open file description
    /// (`fcntl(F_DUPFD_CLOEXEC)`).
    public borrowing func duplicate() throws(Errno) -> FileDescriptor {
        try FileDescriptor(duplicating: rawValue)
    }

    /// A new descriptor (close-on-exec) for the open file description behind `number`, which
    /// stays with its owner (`fcntl(F_DUPFD_CLOEXEC)`): for a descriptor an app passes by
    /// number through a public API.
    public init(duplicating number: CInt) throws(Errno) {
        self.init(adopting: try valueOrErrno("fcntl(F_DUPFD_CLOEXEC)") { fcntl(number, F_DUPFD_CLOEXEC, 0) })
    }

    /// Sets or clears `O_NONBLOCK` (`fcntl(F_GETFL)`, `fcntl(F_SETFL)`).
    public borrowing func setNonBlocking(_ enabled: Bool = true) throws(Errno) {
        let flags = try valueOrErrno("fcntl(F_GETFL)") { voipd_fcntl_getfl(rawValue) }
        let updated = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if updated != flags { _ = try valueOrErrno("fcntl(F_SETFL)") { voipd_fcntl_setfl(rawValue, updated) } }
    }

    /// Sets or clears `FD_CLOEXEC` (`fcntl(F_SETFD)`): whether the descriptor is closed by
    /// `execve`. Every descriptor is made close-on-exec; an in-place upgrade clears it on
    /// those it carries over, for the exec alone.
    public borrowing func setCloseOnExec(_ enabled: Bool = true) throws(Errno) {
        _ = try valueOrErrno("fcntl(F_SETFD)") { fcntl(rawValue, F_SETFD, enabled ? FD_CLOEXEC : 0) }
    }

    /// Makes every descriptor numbered `first` or above close-on-exec at once
    /// (`close_range(first, ~0U, CLOSE_RANGE_CLOEXEC)`, Linux 5.11; `ENOSYS` or `EINVAL`
    /// before): for a program that took over descriptors across an exec, in one call rather
    /// than an `fcntl` each.
    public static func setCloseOnExec(from first: CInt) throws(Errno) {
        precondition(first >= 0, "a negative descriptor number")
        _ = try valueOrErrno("close_range(CLOSE_RANGE_CLOEXEC)") { voipd_close_range_cloexec(UInt32(first)) }
    }

    /// Reads into `buffer` (`read(2)`): how many bytes came (0 at the end of the file), or
    /// ``IOResult/wouldBlock`` when a non-blocking descriptor has nothing.
    public borrowing func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> IOResult<Int> {
        do {
            return .processed(try valueOrErrno("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) })
        } catch .wouldBlock {
            return .wouldBlock
        }
    }

    /// Reads into `buffer` from `offset` (`pread(2)`), leaving the file offset alone; 0 at
    /// the end of the file.
    public borrowing func read(into buffer: UnsafeMutableRawBufferPointer, atOffset offset: Int) throws(Errno) -> Int {
        try valueOrErrno("pread") { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads up to `count` bytes from a blocking descriptor (`read(2)`); an empty array
    /// means the end of the file.
    public borrowing func read(upTo count: Int) throws(Errno) -> [UInt8] {
        // Uninitialised: zeroing 64 KiB for a read of a few bytes cost more than the read.
        // The standard library's closures rethrow untyped errors: the Errno comes out in a Result.
        var result: Result<IOResult<Int>, Errno> = .success(.processed(0))
        let buffer = [UInt8](unsafeUninitializedCapacity: count) { raw, initialized in
            result = Result { () throws(Errno) in try read(into: UnsafeMutableRawBufferPointer(raw)) }
            if case .success(.processed(let n)) = result { initialized = n }
        }
        guard case .processed = try result.get() else { throw Errno(EAGAIN, call: "read") }
        return buffer
    }

    /// Reads the whole file from its start (`pread(2)`), however often it was read before; a
    /// file longer than `limit` bytes is `EFBIG`.
    public borrowing func readFromStart(limit: Int) throws(Errno) -> [UInt8] {
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let offset = contents.count
            let n = try chunk.withUnsafeMutableBytes { raw in Result { () throws(Errno) in try read(into: raw, atOffset: offset) } }.get()
            if n == 0 { return contents }
            guard contents.count + n <= limit else { throw Errno(EFBIG, call: "read") }
            contents.append(contentsOf: chunk[0..<n])
        }
    }

    /// Reads to the end of the file; a file longer than `limit` bytes is `EFBIG`.
    public borrowing func readToEnd(limit: Int) throws(Errno) -> [UInt8] {
        var contents: [UInt8] = []
        while true {
            let chunk = try read(upTo: 65536)
            if chunk.isEmpty { return contents }
            guard contents.count + chunk.count <= limit else { throw Errno.fileTooLarge }
            contents.append(contentsOf: chunk)
        }
    }

    /// Writes all of `bytes` to a blocking descriptor (`write(2)`), looping over short writes.
    public borrowing func writeAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        let array = Array(bytes)
        var offset = 0
        while offset < array.count {
            offset += try array.withUnsafeBytes { raw in
                Result { () throws(Errno) in try valueOrErrno("write") { Glibc.write(rawValue, raw.baseAddress! + offset, array.count - offset) } }
            }.get()
        }
    }

    /// Moves the file offset back to the start (`lseek(SEEK_SET)`).
    public borrowing func rewind() throws(Errno) {
        _ = try valueOrErrno("lseek") { lseek(rawValue, 0, SEEK_SET) }
    }

    /// A file in memory (`memfd_create(MFD_CLOEXEC)`), for state handed to another program
    /// or to the service manager's store.
    public static func memoryFile(named name: String) throws(Errno) -> FileDescriptor {
        FileDescriptor(adopting: try valueOrErrno("memfd_create(\(name))") { voipd_memfd_create(name, voipd_MFD_CLOEXEC) })
    }
}

/// Opens a file (`open(2)`) with `O_CLOEXEC` always added.
public func openFile(_ path: String, flags: CInt, mode: mode_t = 0o644) throws(Errno) -> FileDescriptor {
    FileDescriptor(adopting: try valueOrErrno("open(\(path))") { voipd_open(path, flags | O_CLOEXEC, mode) })
}

/// Opens a file as ``openFile(_:flags:mode:)`` does; nil when there is none (ENOENT).
public func openFileIfPresent(_ path: String, flags: CInt) throws(Errno) -> FileDescriptor? {
    do {
        return try openFile(path, flags: flags)
    } catch .noSuchFileOrDirectory {
        return nil
    }
}

/// A whole file's bytes, or nil when it cannot be opened or read (no file, no permission,
/// more than `limit` bytes), as `FileManager.contents(atPath:)` says it, without
/// `FileManager`, whose first use sets up state and code that stay in voipd's memory.
public func contentsIfReadable(_ path: String, limit: Int = 16 << 20) -> [UInt8]? {
    guard let file = try? openFile(path, flags: O_RDONLY) else { return nil }
    return try? file.readToEnd(limit: limit)
}

/// Two descriptors made together: both ends of a pipe or of a socket pair.
@frozen
public struct DescriptorPair: ~Copyable {
    public var first: FileDescriptor
    public var second: FileDescriptor
}

/// Creates a pipe (`pipe2(O_CLOEXEC)`): `first` is the read end, `second` the write end.
public func makePipe() throws(Errno) -> DescriptorPair {
    var fds: [CInt] = [-1, -1]
    _ = try valueOrErrno("pipe2") { voipd_pipe2(&fds, O_CLOEXEC) }
    return DescriptorPair(first: FileDescriptor(adopting: fds[0]), second: FileDescriptor(adopting: fds[1]))
}
