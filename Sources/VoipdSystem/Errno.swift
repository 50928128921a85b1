import Glibc

/// An error number returned by a system call, with the call's name for context.
///
/// Compare with the named constants (`error == .wouldBlock`, or `catch Errno.wouldBlock`),
/// never with the raw number.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    /// The C `errno` value.
    public let rawValue: CInt
    /// The system call (or operation) that failed.
    public let call: String

    public init(_ rawValue: CInt, call: String = "") {
        self.rawValue = rawValue
        self.call = call
    }

    /// The calling thread's current `errno`.
    public static func current(_ call: String = "") -> Errno { Errno(errno, call: call) }

    public static func == (lhs: Errno, rhs: Errno) -> Bool { lhs.rawValue == rhs.rawValue }

    /// Lets `catch Errno.wouldBlock` match a thrown ``Errno`` of that number, whatever its call.
    public static func ~= (pattern: Errno, error: any Error) -> Bool {
        (error as? Errno)?.rawValue == pattern.rawValue
    }

    public var description: String {
        let text = String(cString: strerror(rawValue))
        return call.isEmpty ? "\(text) (errno \(rawValue))" : "\(call): \(text) (errno \(rawValue))"
    }

    /// The system is out of descriptors or memory (EMFILE, ENFILE, ENOMEM, ENOBUFS): not the
    /// request's fault, and worth trying again later.
    public var isResourceExhaustion: Bool {
        self == .tooManyOpenFiles || self == .fileTableOverflow || self == .noMemory || self == .noBufferSpace
    }

    /// EINTR.
    public static let interrupted = Errno(EINTR)
    /// EAGAIN (EWOULDBLOCK): a non-blocking call would have had to wait.
    public static let wouldBlock = Errno(EAGAIN)
    /// EBADF: a descriptor that is not open; used as a precondition, never thrown.
    public static let badFileDescriptor = Errno(EBADF)
    /// ENOENT.
    public static let noSuchFileOrDirectory = Errno(ENOENT)
    /// EEXIST.
    public static let fileExists = Errno(EEXIST)
    /// ESRCH.
    public static let noSuchProcess = Errno(ESRCH)
    /// EPIPE.
    public static let brokenPipe = Errno(EPIPE)
    /// ECONNRESET.
    public static let connectionReset = Errno(ECONNRESET)
    /// ECONNABORTED.
    public static let connectionAbort = Errno(ECONNABORTED)
    /// EPROTO: a protocol error, as `accept` reports a connection that failed before it was taken.
    public static let protocolError = Errno(EPROTO)
    /// ENOTCONN.
    public static let socketNotConnected = Errno(ENOTCONN)
    /// EADDRINUSE.
    public static let addressInUse = Errno(EADDRINUSE)
    /// ENOPROTOOPT: the kernel does not know the socket option.
    public static let protocolNotAvailable = Errno(ENOPROTOOPT)
    /// EBUSY.
    public static let resourceBusy = Errno(EBUSY)
    /// EOVERFLOW: the value, or the answer, does not fit.
    public static let overflow = Errno(EOVERFLOW)
    /// EFBIG.
    public static let fileTooLarge = Errno(EFBIG)
    /// EMFILE: the process is out of descriptors.
    public static let tooManyOpenFiles = Errno(EMFILE)
    /// ENFILE: the system is out of open files.
    public static let fileTableOverflow = Errno(ENFILE)
    /// ENOMEM.
    public static let noMemory = Errno(ENOMEM)
    /// ENOBUFS.
    public static let noBufferSpace = Errno(ENOBUFS)
    /// EPERM.
    public static let notPermitted = Errno(EPERM)
    /// ENOSYS: the kernel does not have the call.
    public static let notImplemented = Errno(ENOSYS)
    /// EINPROGRESS: a non-blocking `connect` goes on after the call returned.
    public static let inProgress = Errno(EINPROGRESS)
    /// ECONNREFUSED: nobody listens there (for UDP, an ICMP error an earlier datagram drew).
    public static let connectionRefused = Errno(ECONNREFUSED)
    /// ENOTSOCK: the descriptor is not a socket.
    public static let notASocket = Errno(ENOTSOCK)
}

/// Runs a system call; a result of -1 becomes a thrown ``Errno`` naming `call`, made only
/// then. `retryOnInterrupt` (the default) runs the call again after EINTR; a caller whose loop
/// must see the interruption says false. `close` never comes through here: on Linux the
/// descriptor is gone even after EINTR.
///
/// EBADF is a precondition failure, as in NIO and swift-subprocess: every descriptor voipd
/// passes is one it owns, so a descriptor that is not open was closed while still in use,
/// and carrying on would act on whatever file gets its number next.
@inline(__always)
public func valueOrErrno<T: FixedWidthInteger>(
    _ call: @autoclosure () -> String, retryOnInterrupt: Bool = true, _ body: () -> T
) throws(Errno) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = errno
        if error == EINTR && retryOnInterrupt { continue }
        precondition(error != EBADF, "\(call()): a descriptor that is not open (EBADF)")
        throw Errno(error, call: call())
    }
}
