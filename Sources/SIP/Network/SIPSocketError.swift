import Glibc
import VoipdSystem

/// A failed system call on a socket, with its errno.
public struct SIPSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed, such as `bind`.
    public let operation: String
    /// The errno the call set.
    public let errno: Int32

    init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
    }

    init(_ error: Errno) {
        self.init(error.call, errno: error.rawValue)
    }

    /// A name that did not resolve: EINVAL, with what the resolver said.
    init(_ error: AddressResolutionError) {
        self.init(error.description, errno: EINVAL)
    }

    public var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}
