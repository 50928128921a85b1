import CVoipd
import Glibc

extension Socket {
    /// A UDP socket bound to an IPv4 address (port 0 picks an ephemeral port; see
    /// ``localPort(_:)``).
    public static func bindUDP(host: String = "127.0.0.1", port: UInt16 = 0) throws -> FileDescriptor {
        let fd = try make(domain: AF_INET, type: datagramType)
        try withInetAddress(host: host, port: port) { sa, len in _ = try valueOrErrno("bind(\(host):\(port))") { bind(fd.rawValue, sa, len) } }
        return fd
    }

    /// Gives a datagram socket a default peer (`connect(2)`): it then receives only from it.
    public static func connectDatagram(_ socket: borrowing FileDescriptor, host: String, port: UInt16) throws {
        try withInetAddress(host: host, port: port) { sa, len in
            _ = try valueOrErrno("connect(\(host):\(port))") { Glibc.connect(socket.rawValue, sa, len) }
        }
    }
}
