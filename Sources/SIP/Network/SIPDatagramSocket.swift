#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket for SIP: bound to a local address, receiving datagrams from anyone and
/// sending each message in one datagram to an address. The object owns the descriptor and
/// closes it when it goes.
///
/// The socket stays in blocking mode and each call says whether to wait (`MSG_DONTWAIT`):
/// a descriptor passed to another process (voipd holds a duplicate of a VoIP socket) shares
/// its file status flags, and neither side should change them under the other.
public final class SIPDatagramSocket {
    /// What one receive found.
    public enum Received: Sendable {
        /// A datagram and its sender.
        case datagram([UInt8], from: SIPSocketAddress)
        /// A datagram larger than the largest message, discarded, and its sender.
        case oversized(from: SIPSocketAddress)
        /// Nothing waiting.
        case nothing
    }

    /// The largest datagram received whole; a larger one is reported ``Received/oversized(from:)``.
    public static let maximumDatagramSize = 65_535

    public let fd: Int32
    /// The address it is bound to (with the port the kernel chose for port 0).
    public let localAddress: SIPSocketAddress

    /// A socket bound to `address` (port 0 for an ephemeral port).
    public init(binding address: SIPSocketAddress) throws(SIPSocketError) {
        let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SIPSocketError("socket") }
        let bound = address.withSocketAddress { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = SIPSocketError("bind \(address)")
            close(fd)
            throw error
        }
        do {
            localAddress = try SIPSocketAddress.of(socket: fd)
        } catch {
            close(fd)
            throw error
        }
        self.fd = fd
    }

    /// Takes ownership of a bound datagram socket (one voipd handed back, say).
    public init(adopting fd: Int32) throws(SIPSocketError) {
        self.fd = fd
        do {
            localAddress = try SIPSocketAddress.of(socket: fd)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// The local address the kernel would send from to reach `destination` (a UDP socket
    /// connected for the question, which sends nothing).
    public static func localAddress(toward destination: SIPSocketAddress) throws(SIPSocketError) -> SIPSocketAddress {
        let probe = try SIPDatagramSocket(binding: destination.unspecified)
        try probe.connect(to: destination)
        return try SIPSocketAddress.of(socket: probe.fd)
    }

    /// Receives only from `peer` from now on, which also makes it the default destination;
    /// the socket is then a connected one (which voipd can hold as a VoIP socket).
    public func connect(to peer: SIPSocketAddress) throws(SIPSocketError) {
        let result = peer.withSocketAddress { Glibc.connect(fd, $0, $1) }
        guard result == 0 else { throw SIPSocketError("connect \(peer)") }
    }

    /// The address it is connected to, if it is.
    public var connectedPeer: SIPSocketAddress? { try? SIPSocketAddress.of(socket: fd, peer: true) }

    /// The next datagram waiting, without blocking.
    public func receive() throws(SIPSocketError) -> Received {
        var buffer = [UInt8](repeating: 0, count: Self.maximumDatagramSize + 1)
        var storage = sockaddr_storage()
        while true {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC), $0, &length)
                    }
                }
            }
            if count < 0 {
                switch errno {
                case EINTR: continue
                // ECONNREFUSED: an ICMP error for an earlier datagram; nothing to read.
                case EAGAIN, EWOULDBLOCK, ECONNREFUSED: return .nothing
                default: throw SIPSocketError("recvfrom")
                }
            }
            let sender = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SIPSocketAddress(socketAddress: $0, length: length) }
            }
            // A datagram from an address family we cannot answer is dropped like noise.
            guard let sender else { continue }
            guard count <= Self.maximumDatagramSize else { return .oversized(from: sender) }
            return .datagram(Array(buffer[..<count]), from: sender)
        }
    }

    /// Sends `bytes` as one datagram to `destination`.
    public func send(_ bytes: [UInt8], to destination: SIPSocketAddress) throws(SIPSocketError) {
        while true {
            let sent = bytes.withUnsafeBytes { buffer in
                destination.withSocketAddress { sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, $1) }
            }
            if sent >= 0 { return }
            if errno == EINTR { continue }
            throw SIPSocketError("sendto \(destination)")
        }
    }
}
