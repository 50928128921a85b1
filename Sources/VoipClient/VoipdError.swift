import VoipdProtocol
import VoipdSystem

/// What can go wrong talking to voipd.
public enum VoipdError: Error, CustomStringConvertible, Equatable {
    /// Nothing listens on the control socket.
    case daemonNotRunning(path: String, Errno)
    /// voipd refused the request; `ProtocolError.code` says why.
    case refused(ProtocolError)
    /// The connection closed.
    case disconnected
    /// No answer within the deadline.
    case timedOut(String)
    /// A system call failed.
    case system(Errno)
    /// voipd sent something this library does not understand.
    case unexpected(String)

    public var description: String {
        switch self {
        case .daemonNotRunning(let path, let errno): return "voipd is not running (cannot connect to \(path): \(errno))"
        case .refused(let error): return error.description
        case .disconnected: return "the connection to voipd closed"
        case .timedOut(let what): return "timed out waiting for \(what)"
        case .system(let errno): return errno.description
        case .unexpected(let what): return "unexpected message from voipd: \(what)"
        }
    }
}
