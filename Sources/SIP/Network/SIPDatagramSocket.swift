import Glibc
import VoipdSystem
import VoipdVocabulary

/// A UDP socket for SIP: bound to a local address, receiving datagrams from anyone and
/// sending each message in one datagram to an address. The object owns the descriptor and
/// closes it when it goes.
///
/// The socket stays in blocking mode and each receive says not to wait (`MSG_DONTWAIT`):
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

    public let descriptor: FileDescriptor
    /// The descriptor's number, to poll it or hand it to voipd.
    public var fd: Int32 { descriptor.rawValue }
    /// The address it is bound to (with the port the kernel chose for port 0).
    public let localAddress: SIPSocketAddress

    /// A socket bound to `address` (port 0 for an ephemeral port).
    public convenience init(binding address: SIPSocketAddress) throws(SIPSocketError) {
        do throws(Errno) {
            try self.init(owning: Socket.bindUDP(at: address))
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// Takes ownership of a bound datagram socket (one voipd handed back, say).
    public convenience init(adopting fd: Int32) throws(SIPSocketError) {
        do throws(Errno) {
            try self.init(owning: FileDescriptor(adopting: fd))
        } catch {
            throw SIPSocketError(error)
        }
    }

    private init(owning descriptor: consuming FileDescriptor) throws(Errno) {
        localAddress = try Socket.inetLocalEndpoint(of: descriptor)
        self.descriptor = descriptor
    }

    /// The local address the kernel would send from to reach `destination` (a UDP socket
    /// connected for the question, which sends nothing).
    public static func localAddress(toward destination: SIPSocketAddress) throws(SIPSocketError) -> SIPSocketAddress {
        let probe = try SIPDatagramSocket(binding: destination.unspecified)
        try probe.connect(to: destination)
        do throws(Errno) {
            return try Socket.inetLocalEndpoint(of: probe.descriptor)
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// Receives only from `peer` from now on, which also makes it the default destination;
    /// the socket is then a connected one (which voipd can hold as a VoIP socket).
    public func connect(to peer: SIPSocketAddress) throws(SIPSocketError) {
        do throws(Errno) {
            _ = try Socket.connect(descriptor, to: peer)
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// The address it is connected to, if it is.
    public var connectedPeer: SIPSocketAddress? {
        do {
            return try Socket.peerEndpoint(of: descriptor)
        } catch {
            // ENOTCONN: receiving from anyone.
            return nil
        }
    }

    /// The next datagram waiting, without blocking.
    public func receive() throws(SIPSocketError) -> Received {
        var buffer = [UInt8](repeating: 0, count: Self.maximumDatagramSize + 1)
        while true {
            let received: IOResult<Socket.Datagram>
            do throws(Errno) {
                received = try buffer.withUnsafeMutableBytes { bytes in
                    Result { () throws(Errno) in try Socket.receiveDatagram(descriptor, into: bytes) }
                }.get()
            } catch .connectionRefused {
                // An ICMP error for an earlier datagram; nothing to read.
                return .nothing
            } catch {
                throw SIPSocketError(error)
            }
            guard case .processed(let datagram) = received else { return .nothing }
            // A datagram from an address family we cannot answer is dropped like noise.
            guard let sender = datagram.sender else { continue }
            guard datagram.length <= Self.maximumDatagramSize else { return .oversized(from: sender) }
            return .datagram(Array(buffer[..<datagram.length]), from: sender)
        }
    }

    /// Sends `bytes` as one datagram to `destination`.
    public func send(_ bytes: [UInt8], to destination: SIPSocketAddress) throws(SIPSocketError) {
        do throws(Errno) {
            try Socket.sendDatagram(descriptor, bytes, to: destination)
        } catch {
            throw SIPSocketError(error)
        }
    }
}
