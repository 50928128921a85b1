import Glibc

/// An error number returned by a system call, with the call's name for context.
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

    public var description: String {
        let text = String(cString: strerror(rawValue))
        return call.isEmpty ? "\(text) (errno \(rawValue))" : "\(call): \(text) (errno \(rawValue))"
    }

    public static let wouldBlock = Errno(EAGAIN)
    public static let noSuchProcess = Errno(ESRCH)
    public static let brokenPipe = Errno(EPIPE)
    public static let fileTooLarge = Errno(EFBIG)
}

/// Runs a system call, retrying it while it fails with EINTR; a result of -1 becomes a
/// thrown ``Errno``. The one place that retries: `close` never comes through here.
@inline(__always)
public func retryingOnInterrupt<T: FixedWidthInteger>(_ call: String, _ body: () -> T) throws -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = errno
        if error == EINTR { continue }
        throw Errno(error, call: call)
    }
}

/// Runs a system call once; a result of -1 becomes a thrown ``Errno``.
@inline(__always)
public func valueOrErrno<T: FixedWidthInteger>(_ call: String, _ body: () -> T) throws -> T {
    let result = body()
    if result == -1 { throw Errno(errno, call: call) }
    return result
}
