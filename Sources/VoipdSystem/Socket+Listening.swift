import CVoipd
import Glibc
import VoipdVocabulary

/// What a network socket's own descriptor tells of its address and, for a listening TCP
/// socket, of the connections waiting to be accepted.
extension Socket {
    /// The address a network socket is bound to (`getsockname`): port 0 when it is not bound;
    /// nil for a socket of another domain.
    public static func localEndpoint(of fd: borrowing FileDescriptor) throws(Errno) -> InetEndpoint? {
        let storage = try boundAddress(of: fd, into: sockaddr_storage())
        return withUnsafeBytes(of: storage) { raw -> InetEndpoint? in
            switch CInt(storage.ss_family) {
            case AF_INET:
                let address = raw.loadUnaligned(as: sockaddr_in.self)
                return InetEndpoint(address: IPAddress(bytes: withUnsafeBytes(of: address.sin_addr) { Array($0) })!,
                                    port: UInt16(bigEndian: address.sin_port))
            case AF_INET6:
                let address = raw.loadUnaligned(as: sockaddr_in6.self)
                return InetEndpoint(address: IPAddress(bytes: withUnsafeBytes(of: address.sin6_addr) { Array($0) })!,
                                    port: UInt16(bigEndian: address.sin6_port))
            default:
                return nil
            }
        }
    }

    /// The address an IPv4 or IPv6 socket is bound to (`getsockname`); `EAFNOSUPPORT` for a
    /// socket of another domain.
    public static func inetLocalEndpoint(of fd: borrowing FileDescriptor) throws(Errno) -> InetEndpoint {
        guard let local = try localEndpoint(of: fd) else { throw Errno(EAFNOSUPPORT, call: "getsockname: not IPv4 or IPv6") }
        return local
    }

    /// Whether `fd` is a listening socket (`SO_ACCEPTCONN`).
    public static func isListening(_ fd: borrowing FileDescriptor) throws(Errno) -> Bool {
        try intOption(fd, SOL_SOCKET, SO_ACCEPTCONN, "getsockopt(SO_ACCEPTCONN)") != 0
    }

    /// Connections a listening TCP socket has completed and not yet handed to `accept`: its
    /// accept queue (`TCP_INFO`'s `tcpi_unacked`, which for a listener is the queue's length).
    /// Never accepts or disturbs one.
    public static func connectionsWaiting(_ listener: borrowing FileDescriptor) throws(Errno) -> Int {
        Int(try tcpStateAndUnacked(listener).unacked)
    }

    /// `TCP_INFO`'s state (its first byte: `include/net/tcp_states.h`) and `tcpi_unacked`.
    static func tcpStateAndUnacked(_ fd: borrowing FileDescriptor) throws(Errno) -> (state: UInt8, unacked: UInt32) {
        var info = [UInt8](repeating: 0, count: voipd_TCP_INFO_SIZE)
        var length = socklen_t(info.count)
        let raw = fd.rawValue
        let result = info.withUnsafeMutableBytes { getsockopt(raw, CInt(IPPROTO_TCP), voipd_TCP_INFO, $0.baseAddress, &length) }
        if result < 0 { throw Errno.current("getsockopt(TCP_INFO)") }
        let offset = voipd_TCPI_UNACKED_OFFSET
        guard Int(length) >= offset + 4 else { throw Errno(EPROTO, call: "getsockopt(TCP_INFO): \(length) bytes") }
        return (info[0], info.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
    }
}
