import Glibc
import VoipdVocabulary

extension Socket {
    /// A UDP socket bound to an IPv4 or IPv6 address (port 0 picks an ephemeral port; see
    /// ``localPort(_:)``).
    public static func bindUDP(host: String = "127.0.0.1", port: UInt16 = 0) throws -> FileDescriptor {
        try bindUDP(at: endpoint(host: host, port: port))
    }

    /// A UDP socket bound to `endpoint` (port 0 picks an ephemeral port).
    public static func bindUDP(at endpoint: InetEndpoint) throws(Errno) -> FileDescriptor {
        let fd = try make(for: endpoint, type: datagramType)
        try bind(fd, to: endpoint)
        return fd
    }

    /// Gives a datagram socket a default peer (`connect(2)`): it then receives only from it.
    public static func connectDatagram(_ socket: borrowing FileDescriptor, host: String, port: UInt16) throws {
        _ = try connect(socket, to: endpoint(host: host, port: port))
    }
}
